// Where the pinned server is reached, and when it may be followed elsewhere. A
// name such as den.local is answered by whoever speaks first on the network, so
// the addresses it stood for at pinning are the only ones used; a server that
// moves is followed only on proof. Easy to get wrong: a name that merely
// resolves elsewhere proves nothing, and on plain http nothing but the pinned
// Bonjour instance announcing the new address, while the old one is silent,
// counts; on https the pinned key proves the server wherever it is. A server
// configured by name is given the instance that announces it where it first
// answers, if one does: on http only that instance is heard, as for any pin, and
// its name resolving elsewhere is never followed; on https the certificate
// checked for the name at the new addresses proves it (or the pinned key).
import Glibc

/// The pure rules of addresses and moves.
public enum PinMoves {
    /// Whether `text` is an IPv4 or IPv6 address (an IPv6 one may carry a `%zone`).
    public static func isAddress(_ text: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        let bare = text.split(separator: "%", maxSplits: 1).first.map(String.init) ?? text
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1
    }

    /// The addresses to pin for a server whose URL names `host`: none when the host is an address
    /// itself; link-local IPv6 addresses are left out (their zone names an interface of this machine, which may be named otherwise by the next boot).
    public static func pinnable(host: String, resolved: [String]) -> [String] {
        if isAddress(host) { return [] }
        var seen = Set<String>()
        return resolved.filter { !DiscoveredServer.isLinkLocalIPv6($0) && isAddress($0) && seen.insert($0).inserted }
    }

    /// What Bonjour says now about the pinned server's instance.
    public struct Announcement: Sendable, Equatable {
        public var instance: String
        public var port: Int
        public var addresses: [String]

        public init(instance: String, port: Int, addresses: [String]) {
            self.instance = instance
            self.port = port
            self.addresses = addresses
        }
    }

    /// Who said where the server is now.
    public enum Witness: Sendable, Equatable {
        /// The Bonjour instance the pin keeps announces it there.
        case instance
        /// The configured server's name resolves there now.
        case name

        /// The words for people, after "and".
        public var says: String {
            switch self {
            case .instance: "its own Bonjour instance announces it"
            case .name: "its name now resolves to it"
            }
        }
    }

    public enum Decision: Sendable, Equatable {
        /// Nothing to do: it answers, nothing moved, or nobody announced it elsewhere.
        case stay
        /// Follow it: pin these addresses instead (the journal names both).
        case follow(from: [String], to: [String], by: Witness)
        /// It was seen elsewhere, but it may not be followed: a person decides. `why` says what.
        case wait(from: [String], to: [String], by: Witness, why: String)
        /// The configured https server's name resolves there now: follow it once it proves itself
        /// there (the normal TLS check for its name, before any token); `.wait` when it does not.
        case prove(from: [String], to: [String])
    }

    /// With the pinned server silent (`pinnedAnswers` false), whether to follow its instance's
    /// announcement. Only the instance recorded at pinning counts, at the pinned port; http needs
    /// nothing more (the old address is silent), https needs its pinned key (which each
    /// connection then checks); `followMoves` false makes every move wait.
    public static func decide(_ pin: Pin, pinnedAnswers: Bool, announced: [Announcement], followMoves: Bool) -> Decision {
        guard !pinnedAnswers, !pin.addresses.isEmpty, let instance = pin.instance,
              let address = ServerAddress(pin.url),
              let own = announced.first(where: { $0.instance == instance && $0.port == address.port }) else { return .stay }
        let to = pinnable(host: address.host, resolved: own.addresses)
        guard !to.isEmpty, Set(to) != Set(pin.addresses), Set(to).isDisjoint(with: pin.addresses) else { return .stay }
        if !followMoves {
            return .wait(from: pin.addresses, to: to, by: .instance, why: "server.followMoves is false")
        }
        if address.scheme == "https" && pin.key == nil {
            return .wait(from: pin.addresses, to: to, by: .instance, why: "no key is pinned for this https server")
        }
        return .follow(from: pin.addresses, to: to, by: .instance)
    }

    /// With the configured server silent at its kept addresses, whether to follow it. Plain http:
    /// where its own instance (recorded when it first answered) announces it, as for any pin, and
    /// never where its name alone now resolves (`resolved`); https: where its name resolves, once
    /// the server there proves itself. `followMoves` false makes every move wait.
    public static func decideConfigured(_ pin: Pin, pinnedAnswers: Bool, resolved: [String], announced: [Announcement],
                                        followMoves: Bool) -> Decision {
        guard !pinnedAnswers, pin.how == .configured, !pin.addresses.isEmpty, let address = ServerAddress(pin.url) else { return .stay }
        if address.scheme != "https" {
            let byInstance = decide(pin, pinnedAnswers: pinnedAnswers, announced: announced, followMoves: followMoves)
            if byInstance != .stay { return byInstance }
        }
        let to = pinnable(host: address.host, resolved: resolved)
        // Still standing at one of its addresses: the server is down, not moved.
        guard !to.isEmpty, Set(to).isDisjoint(with: pin.addresses) else { return .stay }
        if !followMoves {
            return .wait(from: pin.addresses, to: to, by: .name, why: "server.followMoves is false")
        }
        if address.scheme != "https" {
            let heard = pin.instance.map { "; only its own Bonjour instance \"\($0)\" announcing it there would" }
                ?? ", and no Bonjour instance announced this server where it answered"
            return .wait(from: pin.addresses, to: to, by: .name, why: "on plain http a name that resolves elsewhere proves nothing" + heard)
        }
        return .prove(from: pin.addresses, to: to)
    }

    /// The Bonjour instance that announces the configured plain-http server where it answers: the
    /// one instance that announces its host and port at one of its kept addresses. Nil when none
    /// does, or several do (which of them is the server's own is then unknown), and on https, where
    /// the certificate proves a move and an instance's word is not asked.
    public static func announcer(of pin: Pin, found: [DiscoveredServer]) -> String? {
        guard pin.how == .configured, let address = ServerAddress(pin.url), address.scheme == "http" else { return nil }
        let names = Set(found.filter { server in
            address.isAt(host: server.host, port: server.port) && !Set(server.addresses).isDisjoint(with: pin.addresses)
        }.map(\.name))
        return names.count == 1 ? names.first : nil
    }

    /// What a person runs to move the pin where it was seen.
    public static func fix(url: String, how: PinHow, configuredFile: String) -> String {
        how == .configured
            ? "rm \(configuredFile) && \(DoctorRules.restart)   # the name is then looked up afresh"
            : "parlourctl use \(url)   # or pair again"
    }

    /// The journal line for a decision that is not `.stay` (nor `.prove`, which ends in one of the others).
    public static func notice(_ decision: Decision, pin: Pin, configuredFile: String) -> SatelliteEvent? {
        let fields = { (from: [String], to: [String]) in
            ["server_url": pin.url, "from_addresses": from.joined(separator: " "), "to_addresses": to.joined(separator: " ")]
        }
        switch decision {
        case .stay, .prove:
            return nil
        case .follow(let from, let to, let by):
            return .notice(.notice,
                "The pinned server \(pin.name) (\(pin.url)) no longer answers at \(from.joined(separator: ", ")), and \(by.says) "
                    + "at \(to.joined(separator: ", ")): following it there.", fields: fields(from, to))
        case .wait(let from, let to, let by, let why):
            return .notice(.warning,
                "The pinned server \(pin.name) (\(pin.url)) no longer answers at \(from.joined(separator: ", ")), and \(by.says) "
                    + "at \(to.joined(separator: ", ")). It was not followed (\(why)) and nothing was sent there. To move to it: "
                    + fix(url: pin.url, how: pin.how, configuredFile: configuredFile), fields: fields(from, to))
        }
    }
}
