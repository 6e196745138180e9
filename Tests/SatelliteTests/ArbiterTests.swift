// The Arbiter over real links on loopback: two satellites in this process
// decide between them, a quiet satellite decides alone at once, one whose
// sibling never answers decides at the window's end, and a louder claim from a
// device without the token changes nothing. The roster is a fixed list: Bonjour's
// directory of siblings is tested on its own, with real avahi.
@testable import Satellite
import SatelliteCore
import Glibc
import Synchronization
import Testing

/// A roster that knows the siblings it is given.
struct FixedRoster: SiblingRoster {
    let known: [Sibling]
    let name: String?
    func siblings() async -> [Sibling] { known }
    func advertisedName() async -> String? { name }
}

/// The decisions a bus carried.
final class Decisions: Sendable {
    private let seen = Mutex<[SatelliteEvent]>([])
    var all: [SatelliteEvent] { seen.withLock { $0 } }

    var tap: @Sendable (SatelliteEvent) -> Void {
        { [self] event in
            if case .arbitration = event { seen.withLock { $0.append(event) } }
        }
    }
}

@Suite("The arbiter", .timeLimit(.minutes(1)))
struct ArbiterTests {
    static let keys = SiblingLinkTests.keys

    static func arbiter(_ name: String, on link: RunningLink, siblings: [Sibling], windowMs: Int = 1_000, enabled: Bool = true,
                        bus: EventBus = EventBus()) -> Arbiter {
        Arbiter(settings: .init(SatelliteConfig.Arbitration(enabled: enabled, windowMs: windowMs), name: name),
                roster: FixedRoster(known: siblings, name: name), link: link.link, bus: bus, room: { "\(name) room" })
    }

    /// Two satellites that know each other, waking at once with these levels and probabilities.
    static func pair(_ a: (level: Double, probability: Double, name: String), _ b: (level: Double, probability: Double, name: String),
                     bus: EventBus = EventBus()) async throws -> (ArbitrationDecision?, ArbitrationDecision?) {
        let linkA = try RunningLink(keys: keys)
        let linkB = try RunningLink(keys: keys)
        let arbiterA = arbiter(a.name, on: linkA, siblings: [linkB.sibling(b.name)], bus: bus)
        let arbiterB = arbiter(b.name, on: linkB, siblings: [linkA.sibling(a.name)])
        let wake = MonotonicClock.nanoseconds()
        async let decidedA = arbiterA.arbitrate(levelDb: a.level, probability: a.probability, wakeNs: wake)
        async let decidedB = arbiterB.arbitrate(levelDb: b.level, probability: b.probability, wakeNs: wake)
        let decisions = await (decidedA, decidedB)
        await linkA.stop()
        await linkB.stop()
        return decisions
    }

    @Test("the loudest wins, ties by probability then by name; both reach the same answer", arguments: [
        ((-20.0, 0.9, "hall"), (-30.0, 0.9, "kitchen"), "hall"),
        ((-30.0, 0.9, "hall"), (-24.0, 0.9, "kitchen"), "kitchen"),
        ((-30.0, 0.9, "hall"), (-30.0, 0.95, "kitchen"), "kitchen"),
        ((-30.0, 0.9, "kitchen"), (-30.0, 0.9, "hall"), "hall"),
    ] as [((Double, Double, String), (Double, Double, String), String)])
    func loudest(a: (Double, Double, String), b: (Double, Double, String), winner: String) async throws {
        let decisions = Decisions()
        let (decidedA, decidedB) = try await Self.pair((a.0, a.1, a.2), (b.0, b.1, b.2), bus: EventBus(taps: [decisions.tap]))
        let one = try #require(decidedA)
        let other = try #require(decidedB)
        #expect(one.winner.name == winner)
        #expect(other.winner.name == winner)
        #expect(one.won == (a.2 == winner))
        #expect(other.won == (b.2 == winner))
        #expect(one.claims.map(\.claim.name) == [b.2])
        #expect(other.claims.map(\.claim.name) == [a.2])

        // What watch shows of A's decision.
        let event = try #require(decisions.all.first)
        #expect(decisions.all.count == 1)
        #expect(event.json["event"] == "arbitration")
        #expect(event.json["won"] == .bool(a.2 == winner))
        #expect(event.json["winner"] == .string(winner))
        #expect(event.json["room"] == .string("\(winner) room"))
        #expect(event.json["level"] == .number(winner == a.2 ? a.0 : b.0))
        #expect(event.json["claims"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == [a.2, b.2])
    }

    @Test("with no sibling known it is decided at once, won, and nothing is published")
    func alone() async throws {
        let decisions = Decisions()
        let link = try RunningLink(keys: Self.keys)
        let arbiter = Self.arbiter("hall", on: link, siblings: [], bus: EventBus(taps: [decisions.tap]))
        let decision = try #require(await arbiter.arbitrate(levelDb: -30, probability: 0.9, wakeNs: MonotonicClock.nanoseconds()))
        #expect(decision.won)
        #expect(decision.claims.isEmpty)
        #expect(decision.winner.name == "hall")
        #expect(decisions.all.isEmpty)
        #expect(arbiter.facts == Arbiter.Facts())
        await link.stop()
    }

    @Test("arbitration off: nil, as a lone satellite")
    func off() async throws {
        let link = try RunningLink(keys: Self.keys)
        let arbiter = Self.arbiter("hall", on: link, siblings: [link.sibling("kitchen")], enabled: false)
        #expect(await arbiter.arbitrate(levelDb: -30, probability: 0.9, wakeNs: MonotonicClock.nanoseconds()) == nil)
        await link.stop()
    }

    @Test("a sibling that never answers: decided at the window's end, won, and doctor hears of the silence")
    func silentSibling() async throws {
        let decisions = Decisions()
        let link = try RunningLink(keys: Self.keys)
        // Nothing reads port 9 here: the claim goes, and no answer comes.
        let ghost = Sibling(name: "attic", room: "", addresses: ["127.0.0.1"], port: 9)
        let arbiter = Self.arbiter("hall", on: link, siblings: [ghost], windowMs: 120, bus: EventBus(taps: [decisions.tap]))
        let wake = MonotonicClock.nanoseconds()
        let decision = try #require(await arbiter.arbitrate(levelDb: -30, probability: 0.9, wakeNs: wake))
        // The window is kept in whole milliseconds of the monotonic clock.
        #expect(MonotonicClock.nanoseconds() / 1_000_000 >= wake / 1_000_000 + 120)
        #expect(decision.won)
        #expect(decision.claims.isEmpty)
        #expect(decisions.all.count == 1)
        #expect(arbiter.facts == Arbiter.Facts(decidedWithSiblings: 1, heardFromSiblings: 0, silent: ["attic"]))
        await link.stop()
    }

    @Test("a sibling's claim that came before this satellite's own wake takes part")
    func heardBefore() async throws {
        let link = try RunningLink(keys: Self.keys)
        let arbiter = Self.arbiter("hall", on: link, siblings: [link.sibling("kitchen")])
        var heard = link.claims.makeAsyncIterator()
        let peer = try UDPPeer()
        try peer.send(SiblingLinkTests.claim("kitchen", levelDb: -12), to: link.port)
        // Handed to the arbiter first, then to the test.
        #expect(await heard.next()?.claim.name == "kitchen")
        let decision = try #require(await arbiter.arbitrate(levelDb: -30, probability: 0.9, wakeNs: MonotonicClock.nanoseconds()))
        #expect(!decision.won)
        #expect(decision.winner.name == "kitchen")
        #expect(arbiter.facts.heardFromSiblings == 1)
        await link.stop()
    }

    @Test("a louder claim from a device with another token changes nothing")
    func wrongToken() async throws {
        let link = try RunningLink(keys: Self.keys)
        let arbiter = Self.arbiter("hall", on: link, siblings: [link.sibling("kitchen")], windowMs: 100)
        var heard = link.claims.makeAsyncIterator()
        let peer = try UDPPeer()
        try peer.send(SiblingLinkTests.claim("kitchen", keys: SiblingLinkTests.other, levelDb: 0), to: link.port)
        try peer.send(SiblingLinkTests.claim("kitchen", keys: SiblingLinkTests.other, house: Self.keys.house, levelDb: 0), to: link.port)
        // A claim of this house after them: once it is heard, they were read.
        try peer.send(SiblingLinkTests.claim("den", session: 3, levelDb: -60), to: link.port)
        #expect(await heard.next()?.claim.name == "den")
        let decision = try #require(await arbiter.arbitrate(levelDb: -30, probability: 0.9, wakeNs: MonotonicClock.nanoseconds()))
        #expect(decision.won)
        #expect(decision.winner.name == "hall")
        #expect(!decision.claims.contains { $0.claim.name == "kitchen" })
        #expect(link.link.current.refused == [.wrongHouse: 1, .forged: 1])
        await link.stop()
    }

    @Test("with no token no claim goes out: decided at once, won")
    func noToken() async throws {
        let link = try RunningLink(keys: nil)
        let listener = try RunningLink(keys: Self.keys)
        let arbiter = Self.arbiter("hall", on: link, siblings: [listener.sibling("kitchen")])
        let decision = try #require(await arbiter.arbitrate(levelDb: -30, probability: 0.9, wakeNs: MonotonicClock.nanoseconds()))
        #expect(decision.won)
        #expect(decision.claims.isEmpty)
        #expect(listener.link.current == SiblingLink.Facts(port: listener.port))
        await link.stop()
        await listener.stop()
    }

    @Test("the journal's record of a decision: the winner's name and room, the level, who took part")
    func journalRecord() {
        let own = SiblingClaim(house: Self.keys.house, session: 1, sequence: 1, levelDb: -31, probability: 0.9, ageMs: 0,
                               name: "hall", room: "Hall")
        let winner = SiblingClaim(house: Self.keys.house, session: 2, sequence: 5, levelDb: -24.5, probability: 0.8, ageMs: 3,
                                  name: "kitchen", room: "Kitchen")
        let record = Journal.record(for: .arbitration(won: false, winner: winner, claims: [own, winner]), state: .idle, room: "Hall")
        #expect(record.fields["EVENT"] == "arbitration")
        #expect(record.fields["WON"] == "false")
        #expect(record.fields["WINNER"] == "kitchen")
        #expect(record.fields["WINNER_ROOM"] == "Kitchen")
        #expect(record.fields["LEVEL"] == "-24.50")
        #expect(record.fields["CLAIMS"] == "2")
        #expect(record.message == "Not answering the wake: kitchen in Kitchen heard it loudest (-24.5 dB), among 2 satellites.")
    }
}
