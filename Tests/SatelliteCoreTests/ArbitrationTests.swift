import Testing
@testable import SatelliteCore

@Suite("arbitration among siblings")
struct ArbitrationTests {
    static let keys = HouseKeys(token: "test-token")

    static func heard(_ name: String, _ levelDb: Double, probability: Double = 0.9, wakeMs: UInt64 = 1000,
                      session: UInt64 = 1, house: [UInt8] = keys.house) -> HeardClaim {
        HeardClaim(claim: SiblingClaim(house: house, session: session, sequence: 1, levelDb: levelDb,
                                       probability: probability, ageMs: 0, name: name, room: ""),
                   wakeMs: wakeMs)
    }

    static let own = heard("hall", -30)

    @Test("the loudest wins; ties by probability, then by name, then by session", arguments: [
        ([heard("kitchen", -24)], "kitchen"),
        ([heard("kitchen", -36)], "hall"),
        ([heard("kitchen", -30.004)], "hall"),  // rounds to -30.00: then probability, equal; then names
        ([heard("kitchen", -30, probability: 0.95)], "kitchen"),
        ([heard("kitchen", -30, probability: 0.85)], "hall"),
        ([heard("den", -30)], "den"),
        ([heard("kitchen", -30)], "hall"),
        ([heard("hall", -30, session: 0)], "hall#0"),
        ([heard("hall", -30, session: 2)], "hall#1"),
        ([heard("kitchen", -24), heard("den", -20), heard("attic", -40)], "den"),
        ([heard("Den", -30), heard("den", -30)], "Den"),  // bytes, not the locale: "D" before "d"
        ([], "hall"),
    ] as [([HeardClaim], String)])
    func loudest(claims: [HeardClaim], winner: String) {
        let decision = Arbitration.decide(own: Self.own, claims: claims, windowMs: 200)
        let name = winner.split(separator: "#").first.map(String.init) ?? winner
        #expect(decision.winner.name == name)
        if winner.contains("#") { #expect(decision.winner.session == UInt64(winner.split(separator: "#")[1])!) }
        #expect(decision.won == (decision.winner == Self.own.claim))
    }

    @Test("every satellite given the same claims reaches the same answer, whichever it is")
    func sameAnswer() {
        var random = SeededGenerator(seed: 36)
        for _ in 0..<500 {
            let names = ["kitchen", "hall", "den", "attic"]
            let claims = names.map { name in
                Self.heard(name, Double(Int.random(in: -33 ... -30, using: &random)),
                           probability: [0.9, 0.95][Int.random(in: 0...1, using: &random)])
            }
            let winners = claims.indices.map { at in
                var others = claims
                let own = others.remove(at: at)
                return Arbitration.decide(own: own, claims: others.shuffled(using: &random), windowMs: 200).winner.name
            }
            #expect(Set(winners).count == 1)
            #expect(claims.indices.filter { at in
                var others = claims
                let own = others.remove(at: at)
                return Arbitration.decide(own: own, claims: others, windowMs: 200).won
            }.count == 1)
        }
    }

    @Test("claims outside the wake's window (or two before it), of another house, or this satellite's own do not count", arguments: [
        (heard("kitchen", -10, wakeMs: 1201), false),
        (heard("kitchen", -10, wakeMs: 599), false),
        (heard("kitchen", -10, wakeMs: 1200), true),
        (heard("kitchen", -10, wakeMs: 800), true),
        (heard("kitchen", -10, wakeMs: 600), true),
        (heard("kitchen", -10, wakeMs: 0), false),
        (heard("kitchen", -10, wakeMs: .max), false),
        (heard("kitchen", -10, house: HouseKeys(token: "elsewhere").house), false),
        (own, false),
    ])
    func window(claim: HeardClaim, counts: Bool) {
        let decision = Arbitration.decide(own: Self.own, claims: [claim], windowMs: 200)
        #expect(decision.won == !counts)
        #expect(decision.claims.count == (counts ? 1 : 0))
    }

    @Test("a sibling that woke more than a window earlier decided without this one: when it won what it heard, it answers, however loud this one is",
          arguments: [
              // (the earlier claims, whether this satellite answers)
              ([heard("kitchen", -40, wakeMs: 750)], false),
              ([heard("kitchen", -40, wakeMs: 750), heard("den", -35, wakeMs: 700)], false),  // den won its window
              // den beat kitchen in its window, and den is within this one's window: compared as usual.
              ([heard("kitchen", -40, wakeMs: 750), heard("den", -35, wakeMs: 900)], true),
              ([heard("kitchen", -40, wakeMs: 750), heard("den", -5, wakeMs: 900)], false),
          ] as [([HeardClaim], Bool)])
    func decidedBefore(claims: [HeardClaim], won: Bool) {
        #expect(Arbitration.decide(own: Self.heard("hall", -10), claims: claims, windowMs: 200).won == won)
    }

    @Test("wakes spread over up to two windows: one satellite answers, each deciding on the claims come by its window's end")
    func spread() {
        var random = SeededGenerator(seed: 63)
        var loudestWon = 0
        let trials = 2000
        for _ in 0..<trials {
            let claims = ["kitchen", "hall", "den"].map { name in
                Self.heard(name, Double(Int.random(in: -40 ... -20, using: &random)),
                           wakeMs: 1000 + UInt64(Int.random(in: 0...400, using: &random)))
            }
            let winners = claims.filter { own in
                // What had come when its window closed.
                let known = claims.filter { $0 != own && $0.wakeMs <= own.wakeMs + 200 }
                return Arbitration.decide(own: own, claims: known, windowMs: 200).won
            }
            #expect(winners.count == 1, "\(claims.map { ($0.claim.name, $0.claim.levelCentiDb, $0.wakeMs) })")
            if winners.first?.claim == claims.max(by: { Arbitration.beats($1.claim, $0.claim) })?.claim { loudestWon += 1 }
        }
        // Within a window the loudest always wins (above); spread wider, the first to decide may answer instead.
        #expect(loudestWon > trials / 2)
    }

    @Test("with no sibling known the window is decided at once, won")
    func alone() {
        let window = ArbitrationWindow(own: Self.own, siblings: [], windowMs: 200)
        #expect(window.decision == ArbitrationDecision(won: true, winner: Self.own.claim, claims: []))
    }

    @Test("the window collects until its deadline, then decides with what came")
    func deadline() {
        var window = ArbitrationWindow(own: Self.own, siblings: ["kitchen", "den"], windowMs: 200)
        #expect(window.state == .collecting(deadlineMs: 1200))
        #expect(window.heard(Self.heard("kitchen", -24, wakeMs: 1010)) == nil)
        #expect(window.tick(nowMs: 1199) == nil)
        let decision = window.tick(nowMs: 1200)
        #expect(decision?.won == false)
        #expect(decision?.winner.name == "kitchen")
        #expect(decision?.claims.count == 1)
        // Decided once: what comes later changes nothing.
        #expect(window.heard(Self.heard("den", 0, wakeMs: 1010)) == nil)
        #expect(window.decision == decision)
    }

    @Test("a claim may come up to the detectors' lag after the window: it is waited for, and counts by its wake")
    func lag() {
        var window = ArbitrationWindow(own: Self.own, siblings: ["kitchen", "den"], windowMs: 200, lagMs: 150)
        #expect(window.state == .collecting(deadlineMs: 1350))
        #expect(window.tick(nowMs: 1300) == nil)
        // Woke 190 ms after this one, claimed as its period was read, 140 ms later.
        #expect(window.heard(Self.heard("kitchen", -24, wakeMs: 1190)) == nil)
        let decision = window.tick(nowMs: 1350)
        #expect(decision?.winner.name == "kitchen")
    }

    @Test("the window decides early once every known sibling has claimed, counting claims heard before the wake")
    func early() {
        var window = ArbitrationWindow(own: Self.own, siblings: ["kitchen", "den"], windowMs: 200,
                                       heard: [Self.heard("den", -40, wakeMs: 950), Self.heard("attic", -1, wakeMs: 100)])
        #expect(window.claims.map(\.claim.name) == ["den"])
        #expect(window.heard(Self.heard("kitchen", -50, wakeMs: 1300)) == nil)  // outside the window: still waiting
        let decision = window.heard(Self.heard("kitchen", -50, wakeMs: 1030))
        #expect(decision == ArbitrationDecision(won: true, winner: Self.own.claim, claims: window.claims))
        #expect(window.claims.count == 2)
    }

    @Test("a sibling not yet known that claims counts, without closing the window early")
    func unknownSibling() {
        var window = ArbitrationWindow(own: Self.own, siblings: ["kitchen"], windowMs: 200)
        #expect(window.heard(Self.heard("attic", -5)) == nil)
        #expect(window.heard(Self.heard("kitchen", -50))?.winner.name == "attic")
    }

    @Test("the deadline holds at 100 years of uptime")
    func uptime() {
        let late: UInt64 = 3_155_760_000_000
        var window = ArbitrationWindow(own: Self.heard("hall", -30, wakeMs: late), siblings: ["kitchen"], windowMs: 1000)
        #expect(window.state == .collecting(deadlineMs: late + 1000))
        #expect(window.tick(nowMs: late + 999) == nil)
        #expect(window.tick(nowMs: late + 1000)?.won == true)
    }
}
