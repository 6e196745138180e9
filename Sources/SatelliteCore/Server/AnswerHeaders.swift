// What the HTTP client keeps of an answer's head as libcurl hands it over, one
// line at a time: where a 3xx points, and whether its framing can be trusted.
// curl frames the body itself; this refuses what curl 7.88 would read one way
// of two: Content-Length values that disagree (RFC 9112, 6.3), and notes a
// length beside a Transfer-Encoding, after which the connection carries
// nothing more. What a server sends: read here, pure, table-tested and fuzzed.

public struct AnswerHeaders: Sendable, Equatable {
    /// A 3xx answer's Location as sent (Redirect resolves a relative one).
    public private(set) var location: String?
    /// The Content-Length values seen, each list item apart and trimmed.
    public private(set) var lengths: Set<String> = []
    public private(set) var transferEncoded = false

    public init() {}

    /// Both a length and an encoding: a server that may frame the body either way; its
    /// connection must carry nothing after this answer.
    public var framedTwoWays: Bool { transferEncoded && !lengths.isEmpty }

    /// Reads one line of the head (its CR LF may be on it); a status line starts a new head (a
    /// 1xx comes before the answer's own). False when the lengths disagree: refuse the answer.
    public mutating func read(_ line: some Collection<UInt8>) -> Bool {
        let bytes = Array(line)
        if bytes.starts(with: "HTTP/".utf8) {
            self = AnswerHeaders()
            return true
        }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return true }
        let name = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
        let value = Self.trimmed(bytes[(colon + 1)...].prefix { $0 != 13 && $0 != 10 })
        switch name {
        case "location": location = String(decoding: value, as: UTF8.self)
        case "content-length":
            for part in value.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                lengths.insert(String(decoding: Self.trimmed(part), as: UTF8.self))
            }
            return lengths.count == 1
        case "transfer-encoding": transferEncoded = true
        default: break
        }
        return true
    }

    /// Without the spaces and tabs around it.
    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let blank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        guard let first = bytes.firstIndex(where: { !blank($0) }), let last = bytes.lastIndex(where: { !blank($0) }) else { return [] }
        return bytes[first...last]
    }
}
