import Glibc
import Testing
@testable import SatelliteCore

@Suite("doctor on siblings")
struct SiblingDoctorRulesTests {
    static func facts(siblings: [String] = ["kitchen"], token: Bool = true, port: UInt16? = 40_000, fixedPort: Bool = false,
                      admitted: Int = 0, refused: [ClaimRefusal: Int] = [:], ignored: Int = 0, decided: Int = 0, heard: Int = 0,
                      silent: [String] = []) -> DoctorRules.SiblingClaimFacts {
        DoctorRules.SiblingClaimFacts(siblings: siblings, token: token, port: port, fixedPort: fixedPort, admitted: admitted,
                                      refused: refused, ignored: ignored, decided: decided, heard: heard, silent: silent)
    }

    @Test("the port: bound, in use, privileged")
    func port() {
        let bound = DoctorRules.arbitrationPort(0, bound: 40_000, failure: nil, config: "/etc/parlour/satellite.json")
        #expect(bound.status == .ok)
        #expect(bound.detail.contains("UDP port 40000, taken free at start"))
        let inUse = DoctorRules.arbitrationPort(5_353, bound: nil, failure: ("Address already in use", EADDRINUSE), config: "/c.json")
        #expect(inUse.status == .fail)
        #expect(inUse.detail.contains("Another program holds the port"))
        #expect(inUse.fix?.hasPrefix("sudo ss -ulpn 'sport = :5353'") == true)
        #expect(inUse.fix?.contains("arbitration.port in /c.json") == true)
        let low = DoctorRules.arbitrationPort(53, bound: nil, failure: ("Permission denied", EACCES), config: "/c.json")
        #expect(low.status == .fail)
        #expect(low.fix?.contains("over 1023") == true)
    }

    @Test("claims: arriving, silent siblings (a firewall), another token, replays, no token", arguments: [
        (facts(admitted: 4, decided: 3, heard: 3), DoctorCheck.Status.ok, "4 claims taken, in 3 of 3 decisions", nil),
        (facts(siblings: [], admitted: 0), .ok, "No sibling is known", nil),
        (facts(decided: 2, heard: 0, silent: ["kitchen"]), .warn, "not from kitchen", "set arbitration.port"),
        (facts(fixedPort: true, decided: 1, silent: ["kitchen"]), .warn, "a firewall may drop UDP port 40000", "sudo ufw allow 40000/udp"),
        (facts(admitted: 1, refused: [.wrongHouse: 5]), .warn, "refused as wrongHouse (5 of 6)", "parlourctl token set"),
        (facts(admitted: 0, refused: [.forged: 2, .wrongHouse: 1]), .warn, "refused as forged", "parlourctl token set"),
        (facts(admitted: 1, refused: [.replayed: 3]), .warn, "refused as replayed (3)", "tcpdump"),
        (facts(admitted: 9, refused: [.stale: 1]), .ok, "Refused: 1 stale.", nil),
        (facts(token: false), .warn, "There is no token", DoctorRules.pairFix),
        (facts(token: false, ignored: 3), .warn, "it hears. 3 datagrams came on its port unread.", DoctorRules.pairFix),
        (facts(port: nil), .warn, "not bound", DoctorRules.restart),
    ] as [(DoctorRules.SiblingClaimFacts, DoctorCheck.Status, String, String?)])
    func claims(facts: DoctorRules.SiblingClaimFacts, status: DoctorCheck.Status, detail: String, fix: String?) {
        let check = DoctorRules.siblingClaims(facts)
        #expect(check.name == .siblingClaims)
        #expect(check.status == status)
        #expect(check.detail.contains(detail), "\(check.detail)")
        if let fix { #expect(check.fix?.contains(fix) == true, "\(check.fix ?? "nil")") } else { #expect(check.fix == nil) }
    }
}
