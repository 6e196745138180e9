// What a 3xx answer is told as. Nothing follows a redirect (HTTP or the /listen
// handshake): one could carry the token to any host. A person is told where it
// pointed, but only as scheme://host:port: a Location's path and query are the
// hostile server's text and may hold anything, a token included. Easy to get
// wrong: a Location may be relative (then it points at the server itself), may
// carry user:password@, and its host may hold characters meant to forge a line.

/// The refusal of a redirect and the origin it pointed to.
public enum Redirect {
    /// `scheme://host:port` of where `location` points, resolved against `base` (the URL that
    /// was asked) when it is relative; never its user, path or query. "an address that cannot
    /// be shown" when its scheme or host holds anything but the characters of an address.
    public static func origin(location: String?, base: String) -> String {
        let unknown = "an address that cannot be shown"
        guard let location = location?.trimmed(), !location.isEmpty else { return "no Location given" }
        let baseParts = parts(base)
        var scheme: String
        var rest: Substring
        if location.hasPrefix("//") {
            guard let baseScheme = baseParts?.scheme else { return unknown }
            scheme = baseScheme
            rest = location.dropFirst(2)
        } else if let colon = location.firstIndex(of: ":"), location[colon...].hasPrefix("://") {
            scheme = location[..<colon].lowercased()
            rest = location[location.index(colon, offsetBy: 3)...]
        } else {
            // A path: the server itself.
            guard let baseParts else { return unknown }
            return baseParts.origin
        }
        guard !scheme.isEmpty, scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+.-".contains($0)) }) else {
            return unknown
        }
        var authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        guard let found = hostAndPort(authority, scheme: scheme) else { return unknown }
        scheme = scheme.lowercased()
        return Origin(scheme: scheme, host: found.host, port: found.port).text
    }

    /// The error for a 3xx on `route` (`/health`, `/listen`...): `server_refused`, naming the
    /// status and the origin it pointed to, saying that nothing was sent there.
    public static func refusal(status: Int, location: String?, base: String, route: String) -> SatelliteError {
        let target = origin(location: location, base: base)
        let pointed = location?.trimmed().isEmpty == false ? " to \(target)" : ""
        return SatelliteError(.serverRefused,
            "The server answered \(route) with a redirect (status \(status))\(pointed), which the satellite never follows: "
                + "nothing was sent there, and it will ask the pinned server again. If the server has really moved, "
                + "pin its new address with parlourctl use URL (or pair again).")
    }

    private struct Origin {
        let scheme: String
        let host: String
        let port: Int?

        var text: String {
            let shown = host.contains(":") ? "[\(host)]" : host
            guard let port = port ?? Redirect.defaultPort(scheme) else { return "\(scheme)://\(shown)" }
            return "\(scheme)://\(shown):\(port)"
        }
    }

    private static func parts(_ url: String) -> (scheme: String, origin: String)? {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return nil }
        let scheme = url[..<colon].lowercased()
        let rest = url[url.index(colon, offsetBy: 3)...]
        var authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        guard let found = hostAndPort(authority, scheme: scheme) else { return nil }
        return (scheme, Origin(scheme: scheme, host: found.host, port: found.port).text)
    }

    /// The host (without brackets, in lower case) and the port written, if any; nil when the
    /// host is empty or holds a character no host name or address has.
    private static func hostAndPort(_ authority: Substring, scheme: String) -> (host: String, port: Int?)? {
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        let allowed = { (c: Character) in c.isASCII && (c.isLetter || c.isNumber || "-._:%".contains(c)) }
        guard !host.isEmpty, host.allSatisfy(allowed) else { return nil }
        var port: Int?
        if let portText, !portText.isEmpty {
            guard portText.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(portText), (1...65535).contains(number)
            else { return nil }
            port = number
        }
        return (host.lowercased(), port)
    }

    static func defaultPort(_ scheme: String) -> Int? {
        switch scheme {
        case "http", "ws": 80
        case "https", "wss": 443
        default: nil
        }
    }
}
