// Siblings in a real daemon: its arbitration port is bound and named by doctor;
// a claim made with another token, sent from a test socket as any device on the
// network could, is refused, told on watch and in the journal, and doctor says
// what it means. With arbitration off no port is bound.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("Siblings in the daemon", .timeLimit(.minutes(2)))
struct SiblingDaemonTests {
    static let config: JSONValue = ["name": "hall-pi", "transport": "record", "server": ["retryMs": 2000],
                                    "audio": ["input": "testmic", "output": "testspeaker"]]

    @Test("another house's claim is refused, on watch, in the journal and in doctor; the port is doctor's first check of siblings")
    func refused() async throws {
        let daemon = try await DaemonHarness.start(config: Self.config, token: "house-token", mic: Speech.silence(3))
        let checks = try await DoctorTests.doctor(daemon).checks
        let portCheck = try #require(checks["arbitration_port"])
        #expect(portCheck.status == .ok)
        let port = try #require(Self.port(checks))
        #expect(checks["sibling_claims"]?.status == .ok)
        #expect(checks["sibling_claims"]?.detail.hasPrefix("No sibling is known; 0 claims taken") == true, "\(checks["sibling_claims"]?.detail ?? "")")

        let watcher = try await Watcher.start(daemon)
        let peer = try UDPPeer()
        let other = HouseKeys(token: "another-house")
        try peer.send(SiblingClaim(house: other.house, session: 1, sequence: 1, levelDb: 0, probability: 1, ageMs: 0,
                                   name: "kitchen", room: "Kitchen").encoded(key: other.claimKey), to: port)
        let notice = await watcher.notice("Refused 1 datagram on the arbitration port")
        #expect(notice?["refused_wrongHouse"] == "1")
        #expect(notice?["port"] == .string(String(port)))

        let after = try #require(try await DoctorTests.doctor(daemon).checks["sibling_claims"])
        #expect(after.status == .warn)
        #expect(after.detail.contains("refused as wrongHouse (1 of 1)"), "\(after.detail)")
        #expect(after.fix?.hasPrefix("parlourctl token set") == true)
        // The journal writes on a thread of its own, and no event says a line is written: it is looked for until it is.
        while !daemon.stderr.contains("refused_wronghouse=1") { try await Task.sleep(for: .milliseconds(20)) }
        #expect(daemon.stderr.contains("Siblings' claims are read on UDP port \(port)."))
        await daemon.stop()
    }

    @Test("with no token nothing on the port is read; token set gives the keys at once, without a restart")
    func tokenSet() async throws {
        let daemon = try await DaemonHarness.start(config: Self.config, mic: Speech.silence(3))
        let before = try await DoctorTests.doctor(daemon).checks
        #expect(before["sibling_claims"]?.status == .warn)
        #expect(before["sibling_claims"]?.detail.hasPrefix("There is no token") == true)
        let port = try #require(Self.port(before))
        #expect(try await daemon.ctl("token", "set", input: "house-token\n").status == 0)

        let watcher = try await Watcher.start(daemon)
        let other = HouseKeys(token: "another-house")
        try UDPPeer().send(SiblingClaim(house: other.house, session: 1, sequence: 1, levelDb: 0, probability: 1, ageMs: 0,
                                        name: "kitchen", room: "").encoded(key: other.claimKey), to: port)
        // Read with the keys of the token just set: refused, which only a satellite with keys counts.
        #expect(await watcher.notice("Refused 1 datagram")?["refused_wrongHouse"] == "1")
        await daemon.stop()
    }

    /// The port doctor's arbitration_port check names.
    static func port(_ checks: [String: DoctorCheck]) -> UInt16? {
        checks["arbitration_port"]?.detail.split(separator: " ").lazy
            .compactMap { UInt16($0.trimmingCharacters(in: .punctuationCharacters)) }.first
    }

    @Test("with arbitration off no port is bound, and doctor has no check of siblings")
    func off() async throws {
        var config = Self.config
        if case .object(var fields) = config {
            fields["arbitration"] = ["enabled": false]
            config = .object(fields)
        }
        let daemon = try await DaemonHarness.start(config: config, token: "house-token", mic: Speech.silence(3))
        let names = try await DoctorTests.doctor(daemon).names
        #expect(!names.contains("arbitration_port") && !names.contains("sibling_claims"))
        #expect(!daemon.stderr.contains("Siblings' claims are read"))
        await daemon.stop()
    }
}
