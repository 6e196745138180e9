// An absolute URL taken apart as RFC 3986 writes it (scheme "://" authority,
// path, query, fragment), for the config's server address and for the
// connections (ServerTarget). FoundationEssentials' URLComponents did this,
// and linking FoundationEssentials at all cost the daemon 6.3 MB on disk
// (15.7 against 9.4 MB) and 0.7 MiB resident (BENCHMARKS.md, "What each binary weighs").
// Easy to get wrong: a character RFC 3986 does not allow anywhere, or a "%"
// without two hex digits, makes the whole URL none (URLComponents escaped such
// a character and read on; the daemon never forms such a URL itself);
// the host comes back with its escapes undone, so the caller must check what
// it holds; an IPv6 host keeps its brackets, as URLComponents gave it.

public struct URLParts: Sendable, Equatable {
    /// As written (not lowered).
    public let scheme: String
    /// The user information before "@", if the authority has one.
    public let user: String?
    /// The host with its escapes undone; an IPv6 literal in brackets.
    public let host: String
    /// The host without an IPv6 literal's brackets: what is looked up, and what `isHostName` checks.
    public var name: String { host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host }
    /// The port, if one is written (an empty one is none); out of range stays so, for the caller to refuse.
    public let port: Int?
    /// The authority as written: user information, host and port.
    public let authority: String
    /// As written, escapes kept; "" when there is none.
    public let percentEncodedPath: String
    public let percentEncodedQuery: String?
    public let fragment: String?

    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.allSatisfy(Self.allowed.contains), PercentEscapes.decoded(bytes) != nil else { return nil }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0,
              Self.isLetter(bytes[0]), bytes[..<colon].allSatisfy(Self.schemeBytes.contains),
              bytes[(colon + 1)...].starts(with: "//".utf8)
        else { return nil }
        scheme = String(decoding: bytes[..<colon], as: UTF8.self)

        let authorityStart = colon + 3
        let authorityEnd = bytes[authorityStart...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.endIndex
        let authorityBytes = bytes[authorityStart..<authorityEnd]
        authority = String(decoding: authorityBytes, as: UTF8.self)
        var hostAndPort = authorityBytes
        if let at = authorityBytes.lastIndex(of: UInt8(ascii: "@")) {
            user = String(decoding: authorityBytes[..<at], as: UTF8.self)
            hostAndPort = authorityBytes[(at + 1)...]
        } else {
            user = nil
        }
        var hostBytes = hostAndPort
        var portBytes: ArraySlice<UInt8>?
        if hostAndPort.first == UInt8(ascii: "[") {
            guard let close = hostAndPort.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostBytes = hostAndPort[...close]
            let after = hostAndPort[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return nil }
                portBytes = after.dropFirst()
            }
        } else if let portColon = hostAndPort.firstIndex(of: UInt8(ascii: ":")) {
            hostBytes = hostAndPort[..<portColon]
            portBytes = hostAndPort[(portColon + 1)...]
        }
        if hostBytes.first != UInt8(ascii: "[") {
            // A name holds no "[", "]" or ":" (RFC 3986's reg-name).
            guard !hostBytes.contains(where: { $0 == UInt8(ascii: "[") || $0 == UInt8(ascii: "]") || $0 == UInt8(ascii: ":") }) else { return nil }
        }
        host = String(decoding: PercentEscapes.decoded(hostBytes) ?? [], as: UTF8.self)
        if let portBytes, !portBytes.isEmpty {
            guard portBytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            // Leading zeros are read past; a number past any port's stays out of range without overflowing.
            port = portBytes.reduce(0) { min($0 * 10 + Int($1 - 0x30), 1_000_000) }
        } else {
            port = nil
        }

        let rest = bytes[authorityEnd...]
        let fragmentStart = rest.firstIndex(of: UInt8(ascii: "#"))
        let beforeFragment = rest[..<(fragmentStart ?? rest.endIndex)]
        fragment = fragmentStart.map { String(decoding: bytes[($0 + 1)...], as: UTF8.self) }
        if let question = beforeFragment.firstIndex(of: UInt8(ascii: "?")) {
            percentEncodedPath = String(decoding: beforeFragment[..<question], as: UTF8.self)
            percentEncodedQuery = String(decoding: beforeFragment[(question + 1)...], as: UTF8.self)
        } else {
            percentEncodedPath = String(decoding: beforeFragment, as: UTF8.self)
            percentEncodedQuery = nil
        }
        // "#" may appear once: the fragment holds no other.
        if let fragment, fragment.utf8.contains(UInt8(ascii: "#")) { return nil }
    }

    /// Whether `host` (without IPv6 brackets, its escapes undone) holds only what a host name, an IPv4
    /// or an IPv6 address (with a zone after "%") may: "%0D%0A" would start a header of the URL's choosing.
    public static func isHostName(_ host: some StringProtocol) -> Bool {
        !host.isEmpty && host.utf8.allSatisfy(hostBytes.contains)
    }

    private static let hostBytes = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:%".utf8)

    private static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A }

    private static let schemeBytes = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.".utf8)
    /// Unreserved, reserved and "%": every byte RFC 3986 lets a URL hold.
    private static let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~:/?#[]@!$&'()*+,;=%".utf8)
}
