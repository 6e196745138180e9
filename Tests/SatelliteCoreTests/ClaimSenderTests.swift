import Testing
@testable import SatelliteCore

@Suite("the claims this satellite sends")
struct ClaimSenderTests {
    @Test("each wake's claim carries the next sequence and the level with the offset added; a sibling takes each once")
    func claims() throws {
        let keys = HouseKeys(token: "test-token")
        var sender = ClaimSender(keys: keys, session: 42, name: "hall", room: "Hall", levelOffsetDb: -6)
        var receiver = SiblingClaims(keys: keys, freshnessMs: 1000)
        for sequence in UInt64(1)...3 {
            let claim = sender.claim(levelDb: -20, probability: 0.9, ageMs: 3)
            #expect(claim.sequence == sequence && claim.session == 42 && claim.house == keys.house)
            #expect(claim.levelDb == -26)
            #expect(try receiver.receive(claim.encoded(key: keys.claimKey), arrivedMs: 500).get().claim == claim)
        }
    }
}
