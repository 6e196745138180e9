// Where an http, https, ws or wss URL points, as a connection to it needs it:
// the name to look up and check in the certificate, the port, the Host header,
// and the path with its query. One piece for HTTPTransfer (which hands curl
// the URL rebuilt from it) and WebSocketClient.

import SatelliteCore

struct ServerTarget {
    let secure: Bool
    /// The host as named, without IPv6 brackets: resolved, sent as SNI and checked in the certificate.
    let name: String
    let port: Int
    /// The Host header: the host as written, with the port when it is not the default.
    let hostHeader: String
    let pathAndQuery: String

    /// Why a URL cannot be reached (the URL itself is never in it: its query may hold a secret).
    struct Unusable: Error {
        let reason: String
    }

    /// `schemes` are the plain and the secure scheme spoken, such as ("http", "https").
    init(url: String, schemes: (plain: String, secure: String)) throws(Unusable) {
        guard let parts = URLParts(url) else { throw Unusable(reason: "it is not a URL") }
        switch parts.scheme.lowercased() {
        case schemes.plain: secure = false
        case schemes.secure: secure = true
        default: throw Unusable(reason: "it is not \(schemes.plain):// or \(schemes.secure)://")
        }
        // A user in the URL is never turned into an Authorization header: CallbackURL refuses it, and here it is dropped.
        guard !parts.host.isEmpty else { throw Unusable(reason: "it has no host") }
        name = parts.name
        // The host comes back with its escapes undone: "%0D%0A" would start a header of the URL's choosing.
        guard URLParts.isHostName(name) else { throw Unusable(reason: "its host holds characters no host name has") }
        // After the one unescaping a "%" is an IPv6 zone or nothing: curl would unescape a name again
        // (den%2Elocal pinned and checked, den.local asked for).
        guard !name.contains("%") || name.contains(":") else { throw Unusable(reason: "its host holds a % that is no IPv6 zone") }
        let defaultPort = secure ? 443 : 80
        port = parts.port ?? defaultPort
        guard (1...65535).contains(port) else { throw Unusable(reason: "its port is out of range") }
        // An IPv6 zone (fe80::1%eth0) is this machine's business: not in the Host header.
        let bare = name.split(separator: "%", maxSplits: 1).first.map(String.init) ?? name
        let shownHost = bare.contains(":") ? "[\(bare)]" : bare
        hostHeader = port == defaultPort ? shownHost : "\(shownHost):\(port)"
        let path = parts.percentEncodedPath.isEmpty ? "/" : parts.percentEncodedPath
        pathAndQuery = parts.percentEncodedQuery.map { "\(path)?\($0)" } ?? path
        guard pathAndQuery.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else { throw Unusable(reason: "its path holds a space or a control character") }
    }
}
