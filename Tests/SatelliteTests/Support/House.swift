// A house with several satellites, for the tests of who answers a wake: real
// daemons in the test namespace beside its one avahi-daemon (scripts/netns-run),
// each with its own config, state, control socket, paced microphone (a FIFO the
// test speaks into) and speaker, all holding the token of one test server. The
// same wake word and question go into every microphone, scaled and a few tens
// of milliseconds apart: one voice heard in several rooms. The server's log
// names the client (the satellite's `name`) of everything it was sent, so a
// trial says whose question reached the house.
import Foundation
import TestSupport
import Testing
import SatelliteCore

final class House: Sendable {
    struct Satellite: Sendable {
        let name: String
        let daemon: DaemonHarness
        let watch: WatchLog
    }

    static let names = ["kitchen", "hall", "lounge"]
    static let question = "turn off the kitchen lights"
    /// The server's wake word (any 240 ms of sound) counts only after quiet, as a wake word begins an
    /// utterance: the rest of a question sent by a satellite that reopened its socket does not wake it.
    static let knobs: JSONValue = ["audioMs": 1200, "toneHz": 440, "replyText": "The lights are off.", "wakeAfterQuietMs": 400]

    let server: TestServer
    let satellites: [Satellite]
    /// `local` (each satellite's own wake word) or `server` (the server's, on each stream).
    let wake: String
    /// The wake word (`local`), a short pause, the question and silence, as recorded (0 dB).
    let phrase: [Int16]

    /// Starts the house's server and `count` satellites (kitchen, hall, lounge), each with
    /// `arbitration.enabled` set to `arbitration`, and returns once every one is idle.
    static func start(wake: String, arbitration: Bool, count: Int = 3) async throws -> House {
        let server = try await TestServer.start(knobs: knobs)
        var satellites: [Satellite] = []
        for name in names.prefix(count) {
            let config: JSONValue = [
                "name": .string(name), "room": .string(name), "transport": "stream", "wake": .string(wake),
                "server": ["url": .string(server.url), "retryMs": 2000],
                "audio": ["input": "testmic", "output": "testspeakerlog", "leadingSilenceMs": 4000],
                "arbitration": ["enabled": .bool(arbitration)],
            ]
            let daemon = try await DaemonHarness.start(config: config, token: server.token, fifoMic: true, timedMic: true)
            satellites.append(Satellite(name: name, daemon: daemon, watch: try await WatchLog.start(daemon)))
        }
        for satellite in satellites {
            let idle = await satellite.watch.wait(from: 0) { events, _ in
                events.last { $0["event"] == "state" }?["state"] == "idle"
            }
            if !idle { throw TestFailure("\(satellite.name) never became idle; its stderr:\n\(satellite.daemon.stderr)") }
        }
        // The server's wake word is any 240 ms of sound: the question alone wakes it, and is heard after.
        let phrase = wake == "server" ? try await Speech.raw(question, before: 0.5, after: 2)
            : try await Speech.raw("okay nabu", before: 0.5, after: 0.5) + Speech.raw(question, before: 0, after: 2)
        return House(server: server, satellites: satellites, wake: wake, phrase: Speech.samples(phrase))
    }

    private init(server: TestServer, satellites: [Satellite], wake: String, phrase: [Int16]) {
        self.server = server
        self.satellites = satellites
        self.wake = wake
        self.phrase = phrase
    }

    func satellite(_ name: String) -> Satellite { satellites.first { $0.name == name }! }

    var living: [Satellite] { satellites.filter { $0.daemon.isRunning } }

    /// Whether the daemons know of arbitration at all: `status` has `arbitration`.
    func hasArbitration() async throws -> Bool {
        try await satellites[0].daemon.result("status")["response"]?["arbitration"] != nil
    }

    /// Returns once every living satellite's `status` lists every other living one among its siblings
    /// (Bonjour has no event a test can await here, so status is asked again every 200 ms); at once
    /// when the daemons have no arbitration. False when they never did in `seconds`.
    @discardableResult
    func siblingsKnown(seconds: Double = 20) async throws -> Bool {
        guard try await hasArbitration() else { return false }
        let until = ContinuousClock.now + .seconds(seconds)
        let alive = living
        for satellite in alive {
            let others = Set(alive.map(\.name)).subtracting([satellite.name])
            while true {
                let siblings = try await satellite.daemon.result("status")["response"]?["arbitration"]?["siblings"]?.arrayValue ?? []
                if others.isSubset(of: Set(siblings.compactMap { $0["name"]?.stringValue })) { break }
                if ContinuousClock.now > until { return false }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        return true
    }

    /// The phrase said once in the house: into each satellite's microphone (in `satellites`' order) at
    /// `levels` dB from the recording, after `delaysMs` of silence; nil: that room hears nothing.
    func say(levels: [Double?], delaysMs: [Int]) {
        for (index, satellite) in satellites.enumerated() {
            guard index < levels.count, let level = levels[index], satellite.daemon.isRunning else { continue }
            let gain = pow(10, level / 20)
            let scaled = phrase.map { Int16(clamping: Int((Double($0) * gain).rounded())) }
            let delay = index < delaysMs.count ? delaysMs[index] : 0
            satellite.daemon.room?.say(Speech.silence(Double(delay) / 1000) + scaled.withUnsafeBufferPointer { Data(buffer: $0) })
        }
    }

    /// One wake heard in the house, as each satellite and the server saw it.
    struct Trial: Sendable {
        /// The clients whose question reached the house (an utterance the server heard), in order.
        let turns: [String]
        /// What each satellite's watch showed during the trial, by name.
        let events: [String: [JSONValue]]
        /// What each client sent up the socket during the trial (text and audio, not pings), by name.
        let sent: [String: [JSONValue]]
        /// What the server sent each client during the trial, by name.
        let told: [String: [JSONValue]]
        /// Whether each satellite's speaker played anything but silence during the trial, by name.
        let played: [String: Bool]

        /// `name`'s `arbitration` events.
        func decisions(_ name: String) -> [JSONValue] { (events[name] ?? []).filter { $0["event"] == "arbitration" } }

        /// The states `name` went through.
        func states(_ name: String) -> [String] { House.states(events[name] ?? []) }

        /// A description for a failed expectation.
        var summary: String {
            let each = events.keys.sorted().map { name in
                let seen = (events[name] ?? []).compactMap { event -> String? in
                    switch event["event"]?.stringValue {
                    case "state": event["state"]?.stringValue
                    case "arbitration": "arbitration(won: \(event["won"]?.boolValue.map(String.init) ?? "?"), winner: \(Self.name(event["winner"]) ?? "?"))"
                    case let other?: other
                    case nil: nil
                    }
                }
                return "\(name): \(seen.joined(separator: " "))\(played[name] == true ? " [played]" : "")"
            }
            return "turns \(turns); " + each.joined(separator: "; ")
        }

        /// The winner's name in an arbitration event: a name, or an object with one.
        static func name(_ winner: JSONValue?) -> String? { winner?.stringValue ?? winner?["name"]?.stringValue }
    }

    /// Says the phrase (as `say`), runs `during` beside it, and returns once every satellite is done
    /// with the wake: it lost the decision, or its turn is over and it is idle, or it went away, or it
    /// never woke while another's turn ran to its end.
    func trial(levels: [Double?], delaysMs: [Int] = [0, 30, 60],
               during: (@Sendable (House) async throws -> Void)? = nil) async throws -> Trial {
        let mark = try await server.socketLog().last?["t"]?.numberValue ?? -1
        let marks = satellites.map { $0.watch.count }
        let speakers = try satellites.map { try $0.daemon.playedInOrder().count }
        say(levels: levels, delaysMs: delaysMs)
        let beside = during.map { work in Task { try await work(self) } }

        // Whichever is done first is taken first; once one's turn is over, one that has not woken never will.
        var pending = Set(satellites.indices)
        while !pending.isEmpty {
            let (index, done) = await withTaskGroup(of: (Int, Bool).self) { group in
                for index in pending {
                    group.addTask { (index, await self.satellites[index].watch.wait(from: marks[index]) { Self.settled($0, $1) }) }
                }
                let first = await group.next()!
                group.cancelAll()
                return first
            }
            pending.remove(index)
            if !done { Issue.record("\(satellites[index].name) did not finish the trial") }
            if Self.turnOver(satellites[index].watch.since(marks[index])) {
                pending = pending.filter { Self.woke(satellites[$0].watch.since(marks[$0])) }
            }
        }
        try await beside?.value

        // The server names a second socket of a client whose first it has not yet seen close "name~2".
        let log: [(client: String, entry: JSONValue)] = try await server.socketLog().compactMap { entry in
            guard (entry["t"]?.numberValue ?? 0) > mark, let client = entry["client"]?.stringValue else { return nil }
            return (String(client.prefix { $0 != "~" }), entry)
        }
        let turns = log.filter { $0.entry["event"] == "utterance" }.map(\.client)
        var events: [String: [JSONValue]] = [:], played: [String: Bool] = [:], sent: [String: [JSONValue]] = [:], told: [String: [JSONValue]] = [:]
        for (index, satellite) in satellites.enumerated() {
            events[satellite.name] = satellite.watch.since(marks[index])
            let samples = (try? satellite.daemon.playedInOrder()) ?? []
            played[satellite.name] = samples.dropFirst(speakers[index]).contains { abs(Int($0)) > 100 }
            sent[satellite.name] = log.filter {
                $0.client == satellite.name && $0.entry["dir"] == "in" && ($0.entry["kind"] == "text" || $0.entry["kind"] == "binary")
            }.map(\.entry)
            told[satellite.name] = log.filter { $0.client == satellite.name && $0.entry["dir"] == "out" }.map(\.entry)
        }
        return Trial(turns: turns, events: events, sent: sent, told: told, played: played)
    }

    /// Whether a satellite whose watch showed `events` since the phrase is done with the wake.
    static func settled(_ events: [JSONValue], _ ended: Bool) -> Bool {
        let lost = events.contains { $0["event"] == "arbitration" && $0["won"] == false }
        return ended || turnOver(events) || lost && states(events).last.map { $0 == "idle" } ?? true
    }

    /// Whether `events` show a wake: the wake word, a decision, or a state other than idle (the
    /// server's wake word is seen as listening). The end of the last turn may come after its idle.
    static func woke(_ events: [JSONValue]) -> Bool {
        events.contains { $0["event"] == "wake" || $0["event"] == "arbitration" || $0["event"] == "state" && $0["state"] != "idle" }
    }

    /// Whether `events` show a turn that went from idle and came back to it.
    static func turnOver(_ events: [JSONValue]) -> Bool {
        let states = states(events)
        return states.contains { $0 != "idle" } && states.last == "idle"
    }

    static func states(_ events: [JSONValue]) -> [String] {
        events.filter { $0["event"] == "state" }.compactMap { $0["state"]?.stringValue }
    }

    /// Stops every daemon (each must exit 0 when it was still running) and the server.
    func stop() async {
        for satellite in satellites where satellite.daemon.isRunning {
            let status = await satellite.daemon.stop()
            #expect(status == 0, "\(satellite.name) exited \(status)")
        }
        server.stop()
    }
}
