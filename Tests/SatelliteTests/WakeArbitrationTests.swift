// The wake paths with the siblings' decision on (`arbitration.enabled`) and no
// sibling, from the outside: a real daemon, the project's test server, the
// paced microphone. A satellite alone decides at once and answers as before:
// the whole question, its first words right after the wake word too, reaches
// the server, in both wake modes. (A satellite that loses needs siblings: the
// house tests', and LostWakeTests with a scripted arbiter.)
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("Alone, a satellite that decides with its siblings answers every wake whole", .serialized, .timeLimit(.minutes(3)))
struct WakeArbitrationTests {
    static let question = "turn off the kitchen lights"

    /// From the first to the end of the last loud 80 ms frame of `samples`, as the test server judges loudness.
    static func loudSpanMs(_ samples: [Int16]) -> Int {
        let loud = stride(from: 0, to: samples.count, by: 1280).filter { start in
            let frame = samples[start..<min(start + 1280, samples.count)]
            let squares = frame.reduce(0.0) { $0 + Double($1) * Double($1) }
            return (squares / Double(frame.count)).squareRoot() / 32768 >= 0.012
        }
        guard let first = loud.first, let last = loud.last else { return 0 }
        return (last - first) / 16 + 80
    }

    /// The test server's `utterance`: what it was given to answer.
    static func utterance(_ server: TestServer) async throws -> JSONValue? {
        try await server.socketLog().last { $0["dir"] == "event" && $0["event"] == "utterance" }
    }

    /// The stream transport with the wake word `wake`'s, deciding with (no) siblings.
    static func config(_ server: TestServer, wake: String) -> JSONValue {
        ["name": "kitchen-pi", "room": "kitchen", "transport": "stream", "wake": .string(wake),
         "server": ["url": .string(server.url), "retryMs": 2000],
         "audio": ["input": "testmic", "output": "testspeaker", "leadingSilenceMs": 4000, "echoCancel": false],
         "arbitration": ["enabled": true, "windowMs": 1000]]
    }

    /// The states the watch shows until idle after a turn.
    static func states(_ watcher: SocketClient) async -> [String] {
        var states: [String] = []
        while let event = await watcher.next(where: { $0["event"] == "state" }) {
            states.append(event["state"]?.stringValue ?? "?")
            if states.last == "idle" { break }
        }
        return states
    }

    @Test("local wake word: the question said right after the word goes up whole and is answered")
    func localWake() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 800, "toneHz": 440, "replyText": "The lights are off."])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server, wake: "local"), token: server.token, fifoMic: true)
        let watcher = try await WakeWordTests.idleWatch(daemon)
        let question = try await Speech.raw(Self.question, before: 0, after: 2)
        daemon.room?.say(try await Speech.raw("okay nabu", before: 0.5, after: 0.3) + question)

        #expect(await Self.states(watcher) == ["listening", "thinking", "speaking", "idle"])
        let log = try await server.socketLog(until: "spoke")
        let kinds = log.filter { $0["dir"] == "in" }.map { $0["type"]?.stringValue ?? "audio" }
        #expect(kinds.first == "start", "nothing before the turn's start: \(kinds)")
        #expect(kinds.filter { $0 == "start" }.count == 1)
        let utterance = try #require(try await Self.utterance(server))
        let spoken = Self.loudSpanMs(Speech.samples(question))
        let first = utterance["firstLoudMs"]?.numberValue ?? -1
        let heard = (utterance["lastLoudMs"]?.numberValue ?? -1) + 80 - first
        // The question's first words are there: what went up is as loud for as long as what was said.
        #expect(heard >= Double(spoken - 160), "the server heard \(heard) ms of the question's \(spoken) ms")
        #expect(await daemon.stop() == 0)
    }

    @Test("the server's wake word: the room kept from its stop goes up first, the question is answered, the cue and states as before")
    func serverWake() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 800, "toneHz": 440, "replyText": "The lights are off."])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server, wake: "server"), token: server.token, fifoMic: true)
        let watcher = try await WakeWordTests.idleWatch(daemon)
        let question = try await Speech.raw(Self.question, before: 0.3, after: 2)
        daemon.room?.say(question)

        #expect(await Self.states(watcher) == ["listening", "thinking", "speaking", "idle"])
        let log = try await server.socketLog(until: "spoke")
        let binaries = log.filter { $0["dir"] == "in" && $0["kind"] == "binary" }
        #expect(binaries.allSatisfy { $0["bytes"] == 2560 }, "80 ms messages, the kept ones too")
        #expect(Self.events(log, "wake").count == 1)
        // The server's wake is the question's first 240 ms of loud audio; all the rest reached it after.
        let utterance = try #require(try await Self.utterance(server))
        let spoken = Self.loudSpanMs(Speech.samples(question))
        let heard = (utterance["lastLoudMs"]?.numberValue ?? -1) + 80 - (utterance["firstLoudMs"]?.numberValue ?? 0)
        #expect(heard >= Double(spoken - 240 - 160), "the server heard \(heard) ms of the question's \(spoken) ms after its wake")
        let upgrades = try await server.requests().filter { $0["path"] == "/listen" }
        #expect(upgrades.count == 1, "a satellite that answers keeps its socket")
        #expect(await daemon.stop() == 0)
    }

    static func events(_ log: [JSONValue], _ name: String) -> [JSONValue] {
        log.filter { $0["dir"] == "event" && $0["event"] == .string(name) }
    }
}
