import Testing
@testable import SatelliteCore

@Suite("siblings' claims admitted once each")
struct SiblingClaimsTests {
    static let keys = HouseKeys(token: "test-token")

    static func claim(_ name: String = "hall", session: UInt64 = 7, sequence: UInt64, ageMs: Int = 5) -> [UInt8] {
        SiblingClaim(house: keys.house, session: session, sequence: sequence, levelDb: -30, probability: 0.9,
                     ageMs: ageMs, name: name, room: "Hall").encoded(key: keys.claimKey)
    }

    /// The outcome of each of `sequences` from one sender, in order: true when admitted.
    static func admitted(_ sequences: [UInt64]) -> [Bool] {
        var claims = SiblingClaims(keys: keys, freshnessMs: 1000)
        return sequences.map { sequence in
            if case .success = claims.receive(claim(sequence: sequence), arrivedMs: 1000) { true } else { false }
        }
    }

    @Test("each sequence of a sender's session is taken once, out of order within 64 of the highest", arguments: [
        ([1, 2, 3], [true, true, true]),
        ([1, 1], [true, false]),
        ([3, 1, 2, 2, 1, 3], [true, true, true, false, false, false]),
        ([100, 36, 37, 35, 36], [true, true, true, false, false]),  // 36 is the oldest still told apart
        ([5, 200, 5, 136, 137], [true, true, false, true, true]),
        ([UInt64.max, UInt64.max - 64, UInt64.max - 65, UInt64.max], [true, true, false, false]),
        ([1, 65, 1], [true, true, false]),  // the old highest kept at the window's last bit
        ([1, 66, 1], [true, true, false]),  // too far below the highest to tell: refused
        ([1, 66, 2], [true, true, true]),
    ] as [([UInt64], [Bool])])
    func replays(sequences: [UInt64], expected: [Bool]) {
        #expect(Self.admitted(sequences) == expected)
    }

    @Test("senders and their sessions are told apart; each is counted on its own")
    func senders() {
        var claims = SiblingClaims(keys: Self.keys, freshnessMs: 1000)
        #expect((try? claims.receive(Self.claim(sequence: 1), arrivedMs: 0).get()) != nil)
        #expect((try? claims.receive(Self.claim("den", sequence: 1), arrivedMs: 0).get()) != nil)
        #expect((try? claims.receive(Self.claim(session: 8, sequence: 1), arrivedMs: 0).get()) != nil)
        // The first session is not forgotten when another appears: its old claims stay refused.
        #expect(claims.receive(Self.claim(sequence: 1), arrivedMs: 1001) == .failure(.replayed))
        #expect(claims.refused == [.replayed: 1])
    }

    @Test("a copy of the claim just taken, come within a second (sent to another of this satellite's addresses), is dropped uncounted; later, or of an older claim, it is a replay",
          arguments: [(UInt64(0), ClaimRefusal.duplicate), (1000, .duplicate), (1001, .replayed)])
    func copies(after: UInt64, refusal: ClaimRefusal) {
        var claims = SiblingClaims(keys: Self.keys, freshnessMs: 5000)
        #expect((try? claims.receive(Self.claim(sequence: 1), arrivedMs: 10).get()) != nil)
        #expect(claims.receive(Self.claim(sequence: 1), arrivedMs: 10 + after) == .failure(refusal))
        #expect(claims.refused == (refusal == .duplicate ? [:] : [.replayed: 1]))
        // A copy of an older claim than the highest is a replay however soon it comes.
        #expect((try? claims.receive(Self.claim(sequence: 2), arrivedMs: 10 + after).get()) != nil)
        #expect(claims.receive(Self.claim(sequence: 1), arrivedMs: 10 + after) == .failure(.replayed))
    }

    @Test("the wake is placed at arrival minus its age, on the receiver's clock, at any uptime", arguments: [
        (UInt64(1000), 5, UInt64(995)),
        (UInt64(3), 5, UInt64(0)),
        (UInt64(3_155_760_000_000), 200, UInt64(3_155_759_999_800)),  // 100 years of milliseconds
    ])
    func placed(arrival: UInt64, age: Int, wake: UInt64) throws {
        var claims = SiblingClaims(keys: Self.keys, freshnessMs: 1000)
        #expect(try claims.receive(Self.claim(sequence: 1, ageMs: age), arrivedMs: arrival).get().wakeMs == wake)
    }

    @Test("a claim whose wake lies further back than the freshness bound is stale, and not remembered")
    func stale() throws {
        var claims = SiblingClaims(keys: Self.keys, freshnessMs: 300)
        #expect(claims.receive(Self.claim(sequence: 1, ageMs: 301), arrivedMs: 1000) == .failure(.stale))
        #expect(try claims.receive(Self.claim(sequence: 1, ageMs: 300), arrivedMs: 1000).get().claim.sequence == 1)
    }

    @Test("refusals are counted by reason")
    func counted() {
        var claims = SiblingClaims(keys: Self.keys, freshnessMs: 300)
        _ = claims.receive([1, 2, 3], arrivedMs: 0)
        _ = claims.receive([UInt8](repeating: 0, count: 600), arrivedMs: 0)
        _ = claims.receive(SiblingClaim(house: HouseKeys(token: "x").house, session: 1, sequence: 1, levelDb: 0,
                                        probability: 1, ageMs: 0, name: "x", room: "").encoded(key: Self.keys.claimKey),
                           arrivedMs: 0)
        _ = claims.receive([1, 2, 3], arrivedMs: 0)
        #expect(claims.refused == [.malformed: 2, .oversized: 1, .wrongHouse: 1])
    }

    @Test("memory is bounded: past the limit the least recently heard session is forgotten")
    func bounded() {
        var claims = SiblingClaims(keys: Self.keys, freshnessMs: 1000)
        for session in 0..<UInt64(SiblingClaims.maxSessions + 10) {
            _ = claims.receive(Self.claim(session: session, sequence: 1), arrivedMs: session)
        }
        #expect(claims.seen.count == SiblingClaims.maxSessions)
        // The newest are still known; the oldest, forgotten, would be taken again.
        let newest = UInt64(SiblingClaims.maxSessions + 9)
        #expect(claims.receive(Self.claim(session: newest, sequence: 1), arrivedMs: 2000) == .failure(.replayed))
        #expect(claims.seen[SiblingClaims.Sender(name: "hall", session: 0)] == nil)
    }
}
