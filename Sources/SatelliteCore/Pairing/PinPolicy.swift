// Which server the satellite trusts. The token opens the whole house and
// anything on the network can advertise _parlour._tcp, so: server.url in the
// config wins and is never replaced; then a pin; only with neither does the
// satellite look, and it pins the first server that passes both checks. Easy to
// get wrong: once pinned, a newcomer is only reported, never contacted.

/// The pinning rules, as pure functions for the actors that own the pin and the search.
public enum PinPolicy {
    /// A server that Bonjour found: its instance name and where it said it listens.
    public struct Advertiser: Sendable, Hashable {
        public var name: String
        public var host: String
        public var port: Int

        public init(name: String, host: String, port: Int) {
            self.name = name
            self.host = host
            self.port = port
        }

        /// `http://host:port`, with an IPv6 address in brackets.
        public var url: String {
            let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
            return "http://\(bracketed):\(port)"
        }

        /// `host:port`, for people.
        public var address: String { url.dropFirst("http://".count).description }
    }

    /// What the two checks said about a candidate: `/health`, then `/v1/models` with the token.
    public enum Check: Sendable, Equatable {
        case accepted
        /// `/health` did not answer `ok`; `/v1/models` was not asked.
        case unhealthy
        /// `/health` answered but `/v1/models` refused the token.
        case tokenRefused
    }

    /// The server in use: `server.url` from the config (`configured`), else the stored pin,
    /// else nil, and the satellite must look. `now` stands as `pinnedAt` of a configured server,
    /// `configuredToken` as its token's place, `configuredAddresses` as its addresses (what its
    /// name stood for when first looked up: it is pinned to them like any other server) and
    /// `configuredInstance` as the Bonjour instance that announced it there, if one did.
    public static func serverInUse(configuredURL: String?, stored: Pin?, now: WallTime, configuredToken: TokenKind? = .state,
                                   configuredAddresses: [String] = [], configuredInstance: String? = nil) -> Pin? {
        if let url = configured(configuredURL) {
            var pin = Pin(url: url, name: ServerAddress(url)?.host ?? url, how: .configured, pinnedAt: now,
                          tokenSource: configuredToken)
            pin.addresses = configuredAddresses
            pin.instance = configuredInstance
            return pin
        }
        guard let stored, stored.how != .configured else { return nil }
        return stored
    }

    /// Why a pin may not be made now, or nil when it may. A configured server is never replaced,
    /// only the config says `configured`, and discovery never replaces a pin; pairing and
    /// `parlourctl use` do, as a person asked for them.
    public static func refusalToPin(how: PinHow, configuredURL: String?, stored: Pin?) -> SatelliteError? {
        if let url = configured(configuredURL) {
            return SatelliteError(.invalidRequest,
                "server.url in the config is set to \(url), and it wins over any pin. "
                    + "Empty server.url in the config and restart the satellite to pair or choose a server.")
        }
        if how == .configured {
            return SatelliteError(.invalidRequest, "Only server.url in the config can choose a configured server.")
        }
        if how == .discovered, let stored {
            return SatelliteError(.invalidRequest,
                "\(stored.url) is already pinned, and a server found by Bonjour does not replace it. "
                    + "Run parlourctl unpin first to look again.")
        }
        return nil
    }

    /// With nothing pinned: checks the candidates in the order found, each host and port once,
    /// and stops at the first that is accepted; nobody after it is contacted. Nil when none was.
    public static func firstAccepted(
        _ candidates: [Advertiser], isolation: isolated (any Actor)? = #isolation,
        check: (Advertiser) async -> Check
    ) async -> Advertiser? {
        var tried: [Advertiser] = []
        for candidate in candidates {
            let address = ServerAddress(candidate.url)
            if tried.contains(where: { address?.isAt(host: $0.host, port: $0.port) == true }) { continue }
            tried.append(candidate)
            if await check(candidate) == .accepted { return candidate }
        }
        return nil
    }

    /// The pin for a server found by Bonjour and accepted with the token of `tokenSource`.
    public static func pin(discovered server: Advertiser, at date: WallTime, tokenSource: TokenKind? = .state) -> Pin {
        Pin(url: server.url, name: server.name, how: .discovered, pinnedAt: date, tokenSource: tokenSource)
    }

    /// Whether `server` advertises the pinned server itself (same host and port).
    public static func isPinned(_ server: Advertiser, pinned: Pin) -> Bool {
        ServerAddress(pinned.url)?.isAt(host: server.host, port: server.port) ?? false
    }

    private static func configured(_ url: String?) -> String? {
        guard let url = url?.trimmed(), !url.isEmpty else { return nil }
        return url
    }
}

/// The advertisers already reported while pinned, so each newcomer is reported once.
/// A newcomer is a name, host and port; `unpin` calls `forget()`.
public struct Newcomers: Sendable, Equatable {
    private var reported: Set<Identity> = []

    private struct Identity: Hashable {
        let name: String
        let host: String
        let port: Int
    }

    public init() {}

    /// The advertisers to report now, each at most once: none while the pinned server answers,
    /// and never the pinned server itself. None of them may be contacted.
    public mutating func report(
        _ advertising: [PinPolicy.Advertiser], pinned: Pin, pinnedAnswers: Bool
    ) -> [PinPolicy.Advertiser] {
        guard !pinnedAnswers else { return [] }
        return advertising.filter { server in
            if PinPolicy.isPinned(server, pinned: pinned) { return false }
            let host = server.host.lowercased().trimming { $0 == "." }
            return reported.insert(Identity(name: server.name, host: host, port: server.port)).inserted
        }
    }

    /// Forgets every report (after `unpin`), so the next pin starts afresh.
    public mutating func forget() { reported.removeAll() }

    /// The journal line for one newcomer.
    public static func notice(_ newcomer: PinPolicy.Advertiser, pinned: Pin) -> SatelliteEvent {
        let move = pinned.how == .configured
            ? "To move to it, set server.url in the config to \(newcomer.url)."
            : "To move to it: parlourctl unpin, or parlourctl use \(newcomer.url)."
        return .notice(.warning,
            "Another Parlour server, \(newcomer.name) at \(newcomer.address), is advertising while the pinned server "
                + "\(pinned.url) does not answer. It was not contacted. \(move)",
            fields: ["newcomer_name": newcomer.name, "newcomer_url": newcomer.url, "server_url": pinned.url])
    }
}
