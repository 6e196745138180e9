// The scheme, host and port of a server URL, read by hand. The pairing link,
// pin.json and the pinning rules all ask "is this an http(s) address with a
// host, and which host and port is it?", and must answer alike. Easy to get
// wrong: IPv6 hosts come in brackets, a host may end in a dot, a URL with
// no port means 80 or 443, and a URL with "user:password@" is refused
// everywhere (the satellite's one credential is its token).

/// Where an `http://` or `https://` server URL points.
public struct ServerAddress: Sendable, Equatable {
    /// `http` or `https`, in lower case.
    public let scheme: String
    /// The host with its escapes undone, without IPv6 brackets.
    public let host: String
    /// The port written in the URL, or 80 / 443 for the scheme.
    public let port: Int

    /// Reads `url`; nil when it is not http or https, has no host, has a user or password, or has a
    /// port that is not one.
    public init?(_ url: String) {
        let text = url.trimmed()
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let scheme = text[..<colon].lowercased()
        guard scheme == "http" || scheme == "https", text[colon...].hasPrefix("://") else { return nil }
        let afterSlashes = text.index(colon, offsetBy: 3)
        let authority = text[afterSlashes...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.contains("@") else { return nil }

        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let rest = authority[authority.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return nil }
                portText = rest.dropFirst()
            }
        } else if let portColon = authority.firstIndex(of: ":") {
            host = authority[..<portColon]
            portText = authority[authority.index(after: portColon)...]
        } else {
            host = authority
        }
        // The host's escapes undone by the decoder URLParts uses too, so that every part of the
        // satellite reads "den%2Elocal" as the same host, the one looked up and pinned.
        guard let decoded = PercentEscapes.decoded(host.utf8).flatMap({ String(validating: $0, as: UTF8.self) }) else { return nil }
        host = Substring(decoded)
        guard !host.isEmpty, !host.contains(where: { $0.isWhitespace || $0.isNewline || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7f } == true })
        else { return nil }

        var port = scheme == "https" ? 443 : 80
        if let portText, !portText.isEmpty {
            guard portText.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(portText), (1...65535).contains(number)
            else { return nil }
            port = number
        }
        self.scheme = scheme
        self.host = String(host)
        self.port = port
    }

    /// Whether this address is `host:port`: host names compare without case and without a trailing dot.
    public func isAt(host other: String, port otherPort: Int) -> Bool {
        port == otherPort && ServerAddress.canonical(host) == ServerAddress.canonical(other)
    }

    private static func canonical(_ host: String) -> String {
        var h = host.lowercased()
        if h.hasPrefix("["), h.hasSuffix("]") { h = String(h.dropFirst().dropLast()) }
        while h.hasSuffix(".") { h.removeLast() }
        return h
    }

    /// `scheme://host:port`, always with the port and IPv6 in brackets: where everything would go.
    public var origin: String {
        "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    /// Whether `other` is the same origin (scheme, host and port), so the same server's token may go to it.
    public func sameOrigin(as other: ServerAddress) -> Bool {
        scheme == other.scheme && isAt(host: other.host, port: other.port)
    }

    /// Why `url` is not a server address, in words that never quote it (it may hold a password);
    /// nil when it is one.
    public static func problem(_ url: String) -> String? {
        guard ServerAddress(url) == nil else { return nil }
        if userInfo(in: url) {
            return "The address has a user name or password in it (user:password@), which the satellite never sends: "
                + "its only credential is the token, and that goes to the server alone. Give the address without it, "
                + "such as http://den.local:8765."
        }
        return "\(url.shown) is not an http or https address with a host. Give one such as http://den.local:8765."
    }

    /// Whether the authority of `url` has "user@" or "user:password@".
    public static func userInfo(in url: String) -> Bool {
        guard let slashes = url.range(ofText: "://") else { return false }
        return url[slashes.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }.contains("@")
    }

    /// A URL fit for a message or a log: without its query, fragment or user info,
    /// which is where secrets travel.
    public static func displayURL(_ url: String) -> String {
        var text = Substring(url)
        if let end = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = text[..<end] }
        // Drop "user:password@" from the authority, if there is one.
        if let scheme = text.range(ofText: "://") {
            let authorityEnd = text[scheme.upperBound...].firstIndex(of: "/") ?? text.endIndex
            if let at = text[scheme.upperBound..<authorityEnd].lastIndex(of: "@") {
                text = text[..<scheme.upperBound] + text[text.index(after: at)...]
            }
        }
        return String(text)
    }
}
