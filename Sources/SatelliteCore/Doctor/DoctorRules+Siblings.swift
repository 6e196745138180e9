// Doctor's verdicts on deciding with siblings (docs/arbitration.md): whether
// the arbitration port is bound, and whether siblings' claims reach this
// satellite. A firewall cannot be seen from inside, only what it causes: known
// siblings whose claims never come. Refusals say more: `wrongHouse` and
// `forged` are a satellite that holds another token.
import Glibc

extension DoctorRules {
    /// `port` as configured (0: any free one); `bound` the one bound, or `failure` why none is.
    public static func arbitrationPort(_ port: Int, bound: UInt16?, failure: (reason: String, errno: Int32)?, config: String) -> DoctorCheck {
        if let bound {
            return DoctorCheck(.arbitrationPort, .ok, "Siblings' claims are read on UDP port \(bound)"
                + (port == 0 ? ", taken free at start and advertised on Bonjour." : "."))
        }
        let why = failure.map { "\($0.reason)" } ?? "unknown reason"
        let detail = "The arbitration port \(port) cannot be bound (\(why)), so this satellite answers every wake it hears, "
            + "as if it had no siblings."
        switch failure?.errno {
        case EADDRINUSE?:
            return DoctorCheck(.arbitrationPort, .fail, detail + " Another program holds the port.",
                               fix: "sudo ss -ulpn 'sport = :\(port)'   # shows which; then set arbitration.port in \(config) to a free one (0: any), and \(restart)")
        case EACCES?:
            return DoctorCheck(.arbitrationPort, .fail, detail + " Ports under 1024 need a privilege the daemon does not have.",
                               fix: "set arbitration.port in \(config) to 0 or a port over 1023, then \(restart)")
        default:
            return DoctorCheck(.arbitrationPort, .fail, detail, fix: restart)
        }
    }

    /// What the daemon knows of its siblings' claims.
    public struct SiblingClaimFacts: Sendable, Equatable {
        /// The siblings Bonjour shows now.
        public var siblings: [String]
        /// Whether there is a token, from which the house's keys come.
        public var token: Bool
        /// The port bound (nil: none, which arbitrationPort says).
        public var port: UInt16?
        /// Whether the port was fixed in the config, so a firewall can be opened for it.
        public var fixedPort: Bool
        /// Claims taken since the start.
        public var admitted: Int
        /// Datagrams refused since the start, by reason.
        public var refused: [ClaimRefusal: Int]
        /// Datagrams that came while there was no token, and were not read.
        public var ignored: Int
        /// Decisions taken with siblings known, and how many of them any sibling's claim took part in.
        public var decided: Int
        public var heard: Int
        /// Siblings known at the last decision whose claims did not come in time.
        public var silent: [String]

        public init(siblings: [String], token: Bool, port: UInt16?, fixedPort: Bool, admitted: Int, refused: [ClaimRefusal: Int],
                    ignored: Int = 0, decided: Int, heard: Int, silent: [String]) {
            self.ignored = ignored
            self.siblings = siblings
            self.token = token
            self.port = port
            self.fixedPort = fixedPort
            self.admitted = admitted
            self.refused = refused
            self.decided = decided
            self.heard = heard
            self.silent = silent
        }
    }

    public static func siblingClaims(_ facts: SiblingClaimFacts) -> DoctorCheck {
        guard facts.token else {
            let came = facts.ignored == 0 ? "" : " \(facts.ignored) datagram\(facts.ignored == 1 ? "" : "s") came on its port unread."
            return DoctorCheck(.siblingClaims, .warn, "There is no token, so this satellite cannot recognise its siblings "
                + "(satellites of one house hold the same token): it answers every wake it hears.\(came)", fix: pairFix)
        }
        guard let port = facts.port else {
            return DoctorCheck(.siblingClaims, .warn, "No claim can come in while the arbitration port is not bound.", fix: restart)
        }
        let refused = facts.refused.values.reduce(0, +)
        let otherHouse = facts.refused[.wrongHouse, default: 0] + facts.refused[.forged, default: 0]
        let tally = refused == 0 ? "" : " Refused: \(RefusalReports.text(facts.refused))."
        if otherHouse > facts.admitted {
            let which = facts.refused[.wrongHouse, default: 0] >= facts.refused[.forged, default: 0] ? "wrongHouse" : "forged"
            return DoctorCheck(.siblingClaims, .warn, "Most claims that came were refused as \(which) (\(otherHouse) of \(otherHouse + facts.admitted)): "
                + "a satellite on this network holds another token, so it decides without this one and both may answer.\(tally)",
                               fix: "parlourctl token set   # on each satellite of the house, the same token (or pair each with the same link)")
        }
        let known = facts.siblings.isEmpty ? "no sibling is known" : "siblings known: \(facts.siblings.joined(separator: ", "))"
        if facts.decided > 0, facts.heard == 0 {
            let open = facts.fixedPort
                ? "sudo ufw allow \(port)/udp   # or your firewall's rule for UDP port \(port), on every satellite"
                : "set arbitration.port in the config to a fixed port on every satellite, then allow it: sudo ufw allow PORT/udp"
            return DoctorCheck(.siblingClaims, .warn, "In \(facts.decided) decision\(facts.decided == 1 ? "" : "s") with siblings, "
                + "no sibling's claim came (\(facts.silent.isEmpty ? known : "not from " + facts.silent.joined(separator: ", "))): "
                + "a firewall may drop UDP port \(port) here or on them.\(tally)", fix: open)
        }
        let replays = facts.refused[.replayed, default: 0]
        if replays > facts.admitted, replays > 0 {
            return DoctorCheck(.siblingClaims, .warn, "Most claims that came were refused as replayed (\(replays)): a device "
                + "on this network sends siblings' claims again.\(tally)", fix: "find the device: sudo tcpdump -n udp port \(port)")
        }
        return DoctorCheck(.siblingClaims, .ok, "\(known.prefix(1).uppercased() + known.dropFirst()); "
            + "\(facts.admitted) claim\(facts.admitted == 1 ? "" : "s") taken, in \(facts.heard) of \(facts.decided) decisions with siblings.\(tally)")
    }
}
