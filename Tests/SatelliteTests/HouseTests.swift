// One room answers: three satellites of one house (kitchen, hall, lounge; House)
// hear the same wake word and question, at 0, -6 and -12 dB and a few tens of
// milliseconds apart, and the house's server says whose question reached it.
// With arbitration off every one of them turns, which proves the trials can
// fail; on, exactly the loudest does, in both wake modes, whatever a device
// without the token, a dying sibling or a bad datagram does meanwhile.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("One room answers: the satellites of a house decide who heard the wake word", .serialized, .timeLimit(.minutes(4)))
struct HouseTests {
    /// Levels with `loudest` (an index into House.names) at 0 dB and the next rooms round 6 and 12 dB down.
    static func levels(loudest: Int) -> [Double?] {
        var levels: [Double?] = [nil, nil, nil]
        for step in 0..<3 { levels[(loudest + step) % 3] = -6 * Double(step) }
        return levels
    }

    /// The trials of `oneAnswers`: the loudest in each room once, heard first, last and in between.
    static let trials: [(loudest: Int, delaysMs: [Int])] = [(0, [0, 30, 60]), (1, [0, 60, 30]), (2, [30, 0, 40])]

    /// Exactly one turn reached the house, `winner`'s, and every other satellite still running lost
    /// to it: it played nothing, never spoke, and (wake local) sent the server nothing.
    static func expectOneTurn(_ trial: House.Trial, from winner: String, in house: House,
                              sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(trial.turns == [winner], "one turn, \(winner)'s: \(trial.summary)", sourceLocation: sourceLocation)
        #expect(trial.played[winner] == true, "\(winner) played the answer: \(trial.summary)", sourceLocation: sourceLocation)
        #expect(trial.decisions(winner).last?["won"] == true, "\(winner) won: \(trial.summary)", sourceLocation: sourceLocation)
        for loser in house.living.map(\.name) where loser != winner {
            #expect(trial.played[loser] == false, "\(loser) played nothing: \(trial.summary)", sourceLocation: sourceLocation)
            #expect(!trial.states(loser).contains("speaking"), "\(loser): \(trial.summary)", sourceLocation: sourceLocation)
            // It names the loudest it knew of when it decided: the winner's own claim may come after that,
            // when the winner heard the word more than a window later (then it names the one it deferred to).
            let decision = trial.decisions(loser).last
            let named = House.Trial.name(decision?["winner"])
            #expect(decision?["won"] == false && named != nil && named != loser,
                    "\(loser) lost to \(winner): \(trial.summary)", sourceLocation: sourceLocation)
            if house.wake == "local" {
                // A `spoke` may be the last turn's, going up as that answer ended.
                let sent = (trial.sent[loser] ?? []).filter { $0["type"] != "spoke" }
                #expect(sent.isEmpty, "\(loser) sent nothing: \(sent)", sourceLocation: sourceLocation)
            } else {
                #expect(!(trial.told[loser] ?? []).contains { $0["type"] == "reply" }, "no reply to \(loser)",
                        sourceLocation: sourceLocation)
            }
        }
    }

    /// Starts a house with arbitration on and returns once its satellites know each other (at once
    /// when the daemons have no arbitration: the trials then show why).
    static func arbitrating(wake: String) async throws -> House {
        let house = try await House.start(wake: wake, arbitration: true)
        if try await house.hasArbitration() {
            #expect(try await house.siblingsKnown(), "each satellite lists the other two among its siblings")
        }
        return house
    }

    /// A house with arbitration on (wake local), and its claim ports as anyone on the network finds them.
    static func advertised() async throws -> (House, [Intruder.Target]) {
        let house = try await arbitrating(wake: "local")
        let targets = try await Intruder.targets(named: House.names)
        #expect(Set(targets.map(\.name)) == Set(House.names), "each satellite advertises its claim port: \(targets)")
        return (house, targets)
    }

    /// Stops `intruder`, which sent to every target, and the house, whose satellites all ran throughout.
    static func finish(_ house: House, _ intruder: Intruder, _ targets: [Intruder.Target]) async {
        await intruder.stop()
        #expect(targets.isEmpty || intruder.count > 0)
        #expect(house.living.count == 3, "every satellite is still running")
        await house.stop()
    }

    // MARK: Off, every room; on, the loudest

    @Test("with arbitration off, every satellite that heard the wake word turns", arguments: ["local", "server"])
    func offEveryoneTurns(wake: String) async throws {
        let house = try await House.start(wake: wake, arbitration: false)
        let trial = try await house.trial(levels: Self.levels(loudest: 0))
        #expect(Set(trial.turns) == Set(House.names), "\(trial.summary)")
        #expect(trial.turns.count == 3, "\(trial.summary)")
        for name in House.names {
            #expect(trial.played[name] == true, "\(name) played its answer: \(trial.summary)")
            #expect(trial.decisions(name).isEmpty, "no decision with arbitration off")
        }
        await house.stop()
    }

    @Test("with arbitration on, exactly one turn reaches the house, the loudest satellite's, trial after trial",
          arguments: ["local", "server"])
    func oneAnswers(wake: String) async throws {
        let house = try await Self.arbitrating(wake: wake)
        for (loudest, delays) in Self.trials {
            let trial = try await house.trial(levels: Self.levels(loudest: loudest), delaysMs: delays)
            Self.expectOneTurn(trial, from: House.names[loudest], in: house)
        }
        await house.stop()
    }

    // MARK: Nobody else takes part

    @Test("a device without the token that claims to be louder, at every advertised port, changes nothing")
    func wrongToken() async throws {
        let (house, targets) = try await Self.advertised()
        // The house's identifier is public (the TXT record); its key is not.
        let house16 = targets.first?.txt["house"].flatMap(Self.bytes) ?? HouseKeys(token: house.server.token).house
        let stranger = HouseKeys(token: "not-this-house-\(UUID().uuidString)")
        var datagrams: [[UInt8]] = []
        for (number, name) in (House.names + ["attic"]).enumerated() {
            let loud = { (home: [UInt8]) in
                SiblingClaim(house: home, session: UInt64.random(in: 1...UInt64.max), sequence: UInt64(number + 1),
                             levelDb: 20, probability: 1, ageMs: 0, name: name, room: name)
            }
            datagrams.append(loud(stranger.house).encoded(key: stranger.claimKey))
            datagrams.append(loud(house16).encoded(key: stranger.claimKey))
        }
        let intruder = Intruder(sending: datagrams, to: targets)
        for loudest in [0, 2] {
            let trial = try await house.trial(levels: Self.levels(loudest: loudest))
            Self.expectOneTurn(trial, from: House.names[loudest], in: house)
        }
        await Self.finish(house, intruder, targets)
    }

    @Test("forged, replayed and malformed datagrams at the claim ports are refused, and the satellites keep deciding")
    func badDatagrams() async throws {
        let (house, targets) = try await Self.advertised()
        let keys = HouseKeys(token: house.server.token)
        let tap = try ClaimTap(keys: keys)
        let first = try await house.trial(levels: Self.levels(loudest: 0))
        tap.stop()
        Self.expectOneTurn(first, from: "kitchen", in: house)
        let overheard = tap.heard.filter { $0.claim.name == "kitchen" }
        #expect(!overheard.isEmpty, "the kitchen's claim went over the network")

        // The hall alone hears the next wake: the kitchen's louder claim, replayed, would silence it.
        var bad = overheard.map(\.datagram)
        let wrongKey = HouseKeys(token: "guessed-\(UUID().uuidString)").claimKey
        for heard in overheard {
            var raised = heard.datagram
            raised[35] &+= 7  // a later sequence
            raised[36] = 0x07  // 20 dB, under the old tag
            raised[37] = 0xD0
            bad.append(raised)
            var claim = heard.claim
            claim.sequence += 100
            claim.levelCentiDb = 2000
            bad.append(claim.encoded(key: wrongKey))
        }
        let sample = overheard.first?.datagram ?? SiblingClaim(
            house: keys.house, session: 1, sequence: 1, levelDb: 0, probability: 1, ageMs: 0, name: "kitchen", room: "").encoded(key: wrongKey)
        var version = sample
        version[3] = 9
        var lying = sample
        lying[42] = 200  // a name longer than the datagram
        bad += [[], [0x50], Array("PSC".utf8), (0..<64).map { _ in UInt8.random(in: 0...255) }, Array(sample.dropLast()),
                sample + [0], version, lying, sample + [UInt8](repeating: 0x41, count: 600)]
        let intruder = Intruder(sending: bad, to: targets)
        let alone = try await house.trial(levels: [nil, 0, nil])
        #expect(alone.turns == ["hall"], "the hall answers: \(alone.summary)")
        #expect(alone.played["hall"] == true, "\(alone.summary)")
        #expect(house.living.count == 3, "every satellite is still running")

        // And the three decide as before, the datagrams still coming.
        let again = try await house.trial(levels: Self.levels(loudest: 2))
        Self.expectOneTurn(again, from: "lounge", in: house)
        await Self.finish(house, intruder, targets)
    }

    // MARK: A sibling that goes away

    @Test("a sibling killed during the decision or during the turn changes nothing for the others")
    func siblingKilled() async throws {
        let house = try await Self.arbitrating(wake: "local")
        // The hall dies as it wakes, its claim sent or not: the kitchen answers, the lounge does not.
        let hall = house.satellite("hall")
        let woke = hall.watch.count
        let window = try await house.trial(levels: Self.levels(loudest: 0)) { _ in
            _ = await hall.watch.wait(from: woke) { events, _ in events.contains { $0["event"] == "wake" } }
            await hall.daemon.kill9()
        }
        #expect(!hall.daemon.isRunning)
        Self.expectOneTurn(window, from: "kitchen", in: house)

        // The lounge wins and dies with its question at the server: the kitchen, which lost, stays out of it.
        let lounge = house.satellite("lounge")
        let mark = lounge.watch.count
        let turn = try await house.trial(levels: [-6, nil, 0]) { _ in
            _ = await lounge.watch.wait(from: mark) { events, _ in House.states(events).contains("thinking") }
            await lounge.daemon.kill9()
        }
        #expect(!turn.turns.contains("kitchen"), "the kitchen lost and asked nothing: \(turn.summary)")
        #expect(turn.played["kitchen"] == false, "\(turn.summary)")
        #expect(House.Trial.name(turn.decisions("kitchen").last?["winner"]) == "lounge", "\(turn.summary)")

        // The kitchen, alone now, still answers.
        let alone = try await house.trial(levels: [0, nil, nil])
        #expect(alone.turns == ["kitchen"], "\(alone.summary)")
        #expect(alone.played["kitchen"] == true, "\(alone.summary)")
        await house.stop()
    }

    /// The bytes of a hex text, or nil.
    static func bytes(_ hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16) ?? 0 }
    }
}
