// The WebSocket opening handshake, the client's side (RFC 6455, section 4.1):
// the upgrade request, and the check of the server's answer as its bytes
// come. Pure, so the rules are a table test and the answer is fuzzed
// (Fuzz/websocket-upgrade.swift); WebSocketClient writes the one and feeds
// the other. Easy to get wrong: a header value is the token, so no error holds
// one, and a line break in it would start a header of its choosing; the end
// of the head is where frames begin, so every line must end in CRLF (a bare LF
// or CR is refused, not guessed at: the servers that speak WebSocket write
// CRLF); an extension or subprotocol nobody asked for changes what the frames
// mean, so it fails the handshake.

/// One upgrade request and the reading of its answer.
public struct WebSocketUpgrade: Sendable {
    /// The most bytes the answer's head may have.
    public static let maxAnswerBytes = 16384

    /// Why a request's headers cannot go (never with a value in it).
    public struct BadHeader: Error, Sendable {
        public let reason: String
    }

    /// What the answer says, once its head is in.
    public enum Answer: Sendable, Equatable {
        /// More of the head is to come.
        case incomplete
        /// The upgrade is accepted; the frames begin `headBytes` into the answer.
        case accepted(headBytes: Int)
        /// A redirect: an answer, never followed (the token would go with it).
        case redirect(status: Int, location: String?)
        /// Any other status: the server refused (the only sign of a bad token).
        case status(Int)
        /// Not a WebSocket upgrade, or not HTTP at all.
        case invalid(String)
    }

    /// The request, ready to write.
    public let request: [UInt8]
    /// The Sec-WebSocket-Accept the server must answer with (RFC 6455, 4.2.2).
    public let accept: String
    /// Where the search for the end of the answer's head goes on from.
    private var scanned = 0

    /// `nonce` is 16 random bytes (Sec-WebSocket-Key); `headers` go on the request in order. A name that is
    /// not a token, or a value with a control character, is refused.
    public init(pathAndQuery: String, host: String, headers: [(name: String, value: String)], nonce: [UInt8]) throws(BadHeader) {
        let key = Base64.encode(nonce)
        var text = "GET \(pathAndQuery) HTTP/1.1\r\nHost: \(host)\r\n"
            + "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: \(key)\r\n"
        for (name, value) in headers {
            let name = name.hasSuffix(":") ? String(name.dropLast()) : name
            guard !name.isEmpty, name.utf8.allSatisfy(Self.isTokenByte) else {
                throw BadHeader(reason: "a header's name is not a token")
            }
            guard !value.utf8.contains(where: Self.isControl) else {
                throw BadHeader(reason: "the \(name) header holds a control character")
            }
            text += "\(name): \(value)\r\n"
        }
        request = Array((text + "\r\n").utf8)
        accept = Self.accept(key)
    }

    /// The Sec-WebSocket-Accept a server must answer `key` with.
    public static func accept(_ key: String) -> String {
        Base64.encode(SHA1.digest(Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)))
    }

    /// Reads the answer so far (`bytes`, everything since the request went, growing from call to call).
    public mutating func read(_ bytes: [UInt8]) -> Answer {
        let limit = min(bytes.count, Self.maxAnswerBytes)
        var end: Int?
        while scanned < limit {
            let index = scanned, byte = bytes[index]
            let afterCR = index > 0 && bytes[index - 1] == 13
            if afterCR && byte != 10 || !afterCR && byte == 10 {
                return .invalid("a line of the server's answer does not end in CRLF")
            }
            if Self.isControl(byte) && byte != 13 && byte != 10 {
                return .invalid("the server's answer holds a control character")
            }
            scanned += 1
            if byte == 10 && index >= 3 && bytes[index - 2] == 10 {
                end = index + 1
                break
            }
        }
        guard let end else {
            return bytes.count > Self.maxAnswerBytes ? .invalid("the server's answer has no end within \(Self.maxAnswerBytes) bytes") : .incomplete
        }
        return judge(bytes[..<(end - 4)], headBytes: end)
    }

    private func judge(_ head: ArraySlice<UInt8>, headBytes: Int) -> Answer {
        let lines = head.split(separator: 13, omittingEmptySubsequences: false).enumerated()
            .map { $0.offset == 0 ? $0.element : $0.element.dropFirst() }
        guard let (version, status) = Self.statusLine(lines[0]) else { return .invalid("the server's answer is not HTTP") }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: 58), colon > line.startIndex,
                  line[..<colon].allSatisfy(Self.isTokenByte) else {
                return .invalid("the server's answer has a header line that is not a name and a value")
            }
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self)
            headers.append((String(decoding: line[..<colon], as: UTF8.self).lowercased(), Self.trimmed(value[...])))
        }
        func values(_ name: String) -> [String] { headers.filter { $0.name == name }.map(\.value) }
        func tokens(_ name: String) -> [String] {
            values(name).flatMap { $0.split(separator: ",") }.map { Self.trimmed($0).lowercased() }.filter { !$0.isEmpty }
        }
        switch status {
        case 101:
            guard version == "HTTP/1.1", tokens("upgrade") == ["websocket"], tokens("connection").contains("upgrade"),
                  values("sec-websocket-accept") == [accept] else {
                return .invalid("the server's answer is not a WebSocket upgrade")
            }
            // Nothing was asked for, so nothing may be chosen: a compressed frame would not be read right.
            guard values("sec-websocket-extensions").isEmpty, values("sec-websocket-protocol").isEmpty else {
                return .invalid("the server chose an extension or subprotocol this client did not ask for")
            }
            return .accepted(headBytes: headBytes)
        case 300..<400: return .redirect(status: status, location: values("location").first)
        default: return .status(status)
        }
    }

    /// "HTTP/1.x NNN reason": the version and the status; nil for anything else.
    private static func statusLine(_ line: ArraySlice<UInt8>) -> (version: String, status: Int)? {
        let parts = line.split(separator: 32, maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].count == 8, parts[0].starts(with: Array("HTTP/1.".utf8)),
              let minor = parts[0].last, (48...57).contains(minor),
              parts[1].count == 3, parts[1].allSatisfy({ (48...57).contains($0) }),
              let status = Int(String(decoding: parts[1], as: UTF8.self)), status >= 100 else { return nil }
        return (String(decoding: parts[0], as: UTF8.self), status)
    }

    /// The bytes a header's name may hold (RFC 9110's token).
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 48...57, 65...90, 97...122: return true
        default: return tokenSymbols.contains(byte)
        }
    }

    private static let tokenSymbols = Array("!#$%&'*+-.^_`|~".utf8)

    /// A control character other than a tab: never in a header value.
    private static func isControl(_ byte: UInt8) -> Bool { byte < 0x20 && byte != 0x09 || byte == 0x7f }

    /// Without the spaces and tabs around it.
    private static func trimmed(_ text: Substring) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
