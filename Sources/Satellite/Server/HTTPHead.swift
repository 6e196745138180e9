// The heads of HTTP/1.1 messages as this client writes and reads them: a
// request's head from its headers, refusing what would break the framing, and
// an answer's status line and headers. WebSocketClient's upgrade writes and
// reads its heads with it; HTTPTransfer holds the headers it hands curl to
// the same rule. Easy to get wrong: a header value is the token,
// so no error may hold one; "\r\n" is one Swift Character, so bytes are checked.

enum HTTPHead {
    /// Why a request's headers cannot go (never with a value in it).
    struct BadHeader: Error {
        let reason: String
    }

    /// The bytes a header's name may hold (RFC 9110's token).
    private static let tokenBytes = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)

    static func isTokenByte(_ byte: UInt8) -> Bool { tokenBytes.contains(byte) }

    /// "Name: value\r\n" for each header, in order; a name that is not a token, or a value with
    /// a control character (a line break would start a header of the value's choosing), is refused.
    static func lines(_ headers: [(name: String, value: String)]) throws(BadHeader) -> String {
        var text = ""
        for (name, value) in headers {
            let name = name.hasSuffix(":") ? String(name.dropLast()) : name
            guard !name.isEmpty, name.utf8.allSatisfy(tokenBytes.contains) else {
                throw BadHeader(reason: "a header's name is not a token")
            }
            guard !value.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7f }) else {
                throw BadHeader(reason: "the \(name) header holds a control character")
            }
            text += "\(name): \(value)\r\n"
        }
        return text
    }

    /// Where the head in `bytes` ends (the index just past its empty line), searching on from
    /// `searchedTo` and moving it on; nil while it has not all come.
    static func end(in bytes: [UInt8], searchedTo: inout Int) -> Int? {
        guard bytes.count >= 4, bytes.count - 4 >= searchedTo else { return nil }
        for index in searchedTo...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index + 4
        }
        searchedTo = bytes.count - 3
        return nil
    }
}

/// The head of an answer: its status line and headers.
struct AnswerHead {
    /// nil when the first line is not an HTTP/1.x status line.
    let status: Int?
    /// "HTTP/1.1" or "HTTP/1.0".
    let version: String
    private let headers: [(name: String, value: String)]

    /// `head` is the answer up to (not with) its empty line.
    init(_ head: ArraySlice<UInt8>) {
        let text = String(decoding: head, as: UTF8.self)
        let lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.first.map { $0.split(separator: " ", maxSplits: 2) } ?? []
        let versionOK = statusLine.count >= 2 && statusLine[0].hasPrefix("HTTP/1.")
        version = versionOK ? String(statusLine[0]) : ""
        status = versionOK && statusLine[1].utf8.count == 3 ? Int(statusLine[1]) : nil
        headers = lines.dropFirst().compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (line[..<colon].lowercased(), Self.trimmed(line[line.index(after: colon)...]))
        }
    }

    /// Without the spaces and tabs around it.
    static func trimmed(_ text: Substring) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    /// The first header of that name (lowercase).
    func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    /// Every value of that name (lowercase), in order.
    func values(_ name: String) -> [String] { headers.filter { $0.name == name }.map(\.value) }

    /// Whether a comma-separated header holds `token` (case aside), as Connection holds "close".
    func lists(_ name: String, _ token: String) -> Bool {
        values(name).contains { $0.split(separator: ",").contains { Self.trimmed($0).lowercased() == token } }
    }
}
