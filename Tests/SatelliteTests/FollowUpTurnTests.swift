// Listening again without the wake word after an answer that asks something,
// from the outside: a real daemon whose paced microphone reads a FIFO the test
// speaks into, the project's test server answering first with a question and
// then with a statement (`replyTexts`), and parlourctl. What the server got
// comes from its own log; what the satellite did, from `watch`. A follow-up
// goes from speaking straight to listening, so a state that goes idle after an
// answer shows that no follow-up began.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("An answer that asks is answered without the wake word", .serialized, .timeLimit(.minutes(3)))
struct FollowUpTurnTests {
    static let question = "turn off the kitchen lights"
    static let answer = "the kitchen"

    static func config(_ server: TestServer, transport: String = "stream", wake: String = "push",
                       conversation: [String: JSONValue] = [:]) -> JSONValue {
        // Long enough for the answer to start under load (3000 was not, in a parallel pass on two
        // cores); it costs a test only when nobody speaks.
        var follow: [String: JSONValue] = ["followUpMs": 6000]
        follow.merge(conversation) { _, new in new }
        return ["name": "kitchen-pi", "room": "kitchen", "transport": .string(transport), "wake": .string(wake),
                "server": ["url": .string(server.url), "retryMs": 2000],
                "audio": ["input": "testmic", "output": "testspeaker", "leadingSilenceMs": 4000],
                "conversation": .object(follow)]
    }

    static func idleWatch(_ daemon: DaemonHarness) async throws -> SocketClient {
        let watcher = try SocketClient(path: daemon.socket)
        let status = await watcher.watch()
        if status?["status"]?["state"] != "idle" { _ = await watcher.state("idle") }
        return watcher
    }

    /// Every watch event up to and including the first that satisfies `last`.
    static func events(_ watcher: SocketClient, until last: (JSONValue) -> Bool) async -> [JSONValue] {
        var seen: [JSONValue] = []
        while let event = await watcher.next(where: { _ in true }) {
            seen.append(event)
            if last(event) { break }
        }
        return seen
    }

    static func isIdle(_ event: JSONValue) -> Bool { event["event"] == "state" && event["state"] == "idle" }

    static func states(_ events: [JSONValue]) -> [String] {
        events.filter { $0["event"] == "state" }.compactMap { $0["state"]?.stringValue }
    }

    static func kinds(_ log: [JSONValue]) -> [String] {
        log.filter { $0["dir"] == "in" && ($0["kind"] == "binary" || $0["kind"] == "text") }.map { $0["type"]?.stringValue ?? "audio" }
    }

    /// The answer said once the follow-up listens, as a person answers once the question has been
    /// asked (the microphone is kept open, so what is said before is not kept for the turn); the
    /// events until it listened, then (`untilIdle`) those until idle.
    static func answer(_ answer: Data, _ daemon: DaemonHarness, _ watcher: SocketClient, untilIdle: Bool = true) async -> [JSONValue] {
        let before = await events(watcher) { $0["event"] == "state" && ($0["state"] == "listening" || $0["state"] == "idle") }
        guard before.last?["state"] == "listening" else { return before }
        daemon.room?.say(answer)
        return untilIdle ? before + (await events(watcher, until: isIdle)) : before
    }

    /// `parlourctl listen`, the question said once it listens; returns its result.
    static func listen(_ daemon: DaemonHarness, _ watcher: SocketClient) async throws -> JSONValue {
        let listen = Task { try await daemon.result("listen") }
        _ = await watcher.state("listening")
        daemon.room?.say(try await Speech.raw(question, before: 0.3, after: 1.5))
        return try await listen.value
    }

    @Test("after a pushed question, the answer is heard without listen, and a statement ends the conversation",
          arguments: ["record", "stream"])
    func pushed(transport: String) async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 400, "replyTexts": ["Which room?", "Done."]])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server, transport: transport), token: server.token, fifoMic: true)
        let watcher = try await Self.idleWatch(daemon)
        let answer = try await Speech.raw(Self.answer, before: 1, after: 1.5)
        let result = try await Self.listen(daemon, watcher)
        // The caller has its one result: the question's.
        #expect(result["response"]?["reply"] == "Which room?")

        let asked = await Self.events(watcher) { $0["event"] == "followUp" }
        #expect(Self.states(asked).last == "speaking", "\(Self.states(asked))")
        let rest = await Self.answer(answer, daemon, watcher)
        // Straight from speaking to listening, then a turn like any other, and idle after the statement.
        #expect(Self.states(rest) == ["listening", "thinking", "speaking", "idle"], "\(Self.states(rest))")
        #expect(rest.contains { $0["event"] == "reply" && $0["reply"] == "Done." })
        #expect(!rest.contains { $0["event"] == "followUp" })
        #expect((asked + rest).filter { $0["event"] == "finished" }.count == 1, "no caller waits for the follow-up")

        if transport == "stream" {
            let kinds = Self.kinds(try await server.socketLog(until: "spoke", count: 2))
            #expect(kinds.filter { $0 == "start" }.count == 2, "\(kinds)")
            let secondStart = try #require(kinds.lastIndex(of: "start"))
            #expect(kinds[..<secondStart].contains("spoke"), "the follow-up starts after the question has played")
            let lastEnd = try #require(kinds.lastIndex(of: "end"))
            #expect(kinds[(lastEnd + 1)...] == ["spoke"], "nothing of the room after the statement: \(kinds)")
            // Nothing was lost at the onset: what went up holds the quiet from just before the answer began.
            let utterances = try await server.socketLog().filter { $0["event"] == "utterance" }
            let firstLoud = utterances.last?["firstLoudMs"]?.numberValue ?? 0
            #expect(utterances.count == 2 && firstLoud > 100, "the answer's first loud frame at \(firstLoud) ms")
        } else {
            let voice = try await server.requests().filter { $0["path"] == "/voice" }
            #expect(voice.count == 2)
            #expect(voice.allSatisfy { $0["client"] == "kitchen-pi" }, "the same conversation")
        }
        #expect(await daemon.stop() == 0)
    }

    @Test("after the server's own turn or the local wake word, the answer goes up as a push turn without the wake word",
          arguments: ["server", "local"])
    func woken(wake: String) async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 400, "replyTexts": ["Which room?", "Done."]])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server, wake: wake), token: server.token, fifoMic: true)
        let watcher = try await Self.idleWatch(daemon)
        let question = try await Speech.raw(Self.question, before: 0.3, after: 2)
        let answer = try await Speech.raw(Self.answer, before: 1, after: 1.5)
        daemon.room?.say(wake == "local" ? try await Speech.raw("okay nabu", before: 0.5, after: 0.5) + question : question)

        let asked = await Self.events(watcher) { $0["event"] == "followUp" }
        #expect(asked.contains { $0["event"] == "reply" && $0["reply"] == "Which room?" })
        let rest = await Self.answer(answer, daemon, watcher)
        #expect(Self.states(rest) == ["listening", "thinking", "speaking", "idle"], "\(Self.states(rest))")
        #expect(rest.contains { $0["event"] == "heard" })
        #expect(rest.contains { $0["event"] == "reply" && $0["reply"] == "Done." })
        #expect(!rest.contains { $0["event"] == "wake" }, "no wake word the second time")

        let kinds = Self.kinds(try await server.socketLog(until: "spoke", count: 2))
        #expect(kinds.filter { $0 == "start" }.count == (wake == "local" ? 2 : 1), "\(kinds)")
        let lastEnd = try #require(kinds.lastIndex(of: "end"))
        let start = try #require(kinds.lastIndex(of: "start"))
        #expect(kinds[start..<lastEnd].dropFirst().allSatisfy { $0 == "audio" } && lastEnd - start > 10, "\(kinds)")
        let upgrades = try await server.requests().filter { $0["path"] == "/listen" }
        #expect(upgrades.count == 1, "the same socket, the same client")
        #expect(await daemon.stop() == 0)
    }

    @Test("silence after a question sends nothing and the satellite goes back to waiting")
    func silence() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 400, "replyText": "Which room?"])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server, conversation: ["followUpMs": 1000]),
                                                   token: server.token, fifoMic: true)
        let watcher = try await Self.idleWatch(daemon)
        _ = try await Self.listen(daemon, watcher)
        _ = await watcher.next { $0["event"] == "followUp" }
        let rest = await Self.events(watcher, until: Self.isIdle)
        #expect(Self.states(rest) == ["listening", "idle"], "\(Self.states(rest))")
        let kinds = Self.kinds(try await server.socketLog(until: "spoke"))
        #expect(kinds.filter { $0 == "start" }.count == 1)
        let end = try #require(kinds.firstIndex(of: "end"))
        #expect(kinds[(end + 1)...] == ["spoke"], "nothing went up after the question: \(kinds)")
        // Waiting for the wake word (here: a listen) again.
        #expect(try await daemon.result("status")["response"]?["state"] == "idle")
        #expect(await daemon.stop() == 0)
    }

    @Test("never, and the limit in a row, hold", arguments: [("never", 3, 0), ("question", 1, 1)])
    func limits(mode: String, max: Int, followUps: Int) async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 400, "replyText": "Which room?"])
        defer { server.stop() }
        let conversation: [String: JSONValue] = ["followUp": .string(mode), "maxFollowUps": .number(Double(max))]
        let daemon = try await DaemonHarness.start(config: Self.config(server, transport: "record", conversation: conversation),
                                                   token: server.token, fifoMic: true)
        let watcher = try await Self.idleWatch(daemon)
        let answer = try await Speech.raw(Self.answer, before: 1, after: 1.5)
        _ = try await Self.listen(daemon, watcher)
        var seen = 0
        while true {
            let next = await watcher.next { $0["event"] == "followUp" || Self.isIdle($0) }
            guard next?["event"] == "followUp" else { break }
            seen += 1
            _ = await Self.answer(answer, daemon, watcher, untilIdle: false)
        }
        #expect(seen == followUps)
        #expect(try await server.requests().filter { $0["path"] == "/voice" }.count == 1 + followUps)
        #expect(await daemon.stop() == 0)
    }

    @Test("a question cut short by barge-in (the server's stop) is not followed")
    func bargeIn() async throws {
        // The server hears its wake word half a second into a 3 s answer, as it would over a person.
        let server = try await TestServer.start(knobs: ["audioMs": 3000, "replyText": "Which room?", "socketStopAfterWavMs": 500])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server), token: server.token, fifoMic: true)
        let watcher = try await Self.idleWatch(daemon)
        let result = try await Self.listen(daemon, watcher)
        #expect(result["response"]?["reply"] == "Which room?")
        let rest = await Self.events(watcher, until: Self.isIdle)
        #expect(!rest.contains { $0["event"] == "followUp" }, "\(rest)")
        let played = try daemon.playedSound()
        #expect(played.count < 2 * 16000, "the answer stopped early: \(played.count) samples played")
        #expect(await daemon.stop() == 0)
    }

    @Test("cancel, a new listen and mute end a follow-up at once")
    func ended() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 400, "replyText": "Which room?"])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server, conversation: ["followUpMs": 15000]),
                                                   token: server.token, fifoMic: true)
        let watcher = try await Self.idleWatch(daemon)
        _ = try await Self.listen(daemon, watcher)
        _ = await watcher.next { $0["event"] == "followUp" }
        _ = await watcher.state("listening")
        #expect(try await daemon.ctl("cancel").status == 0)
        let cancelled = await watcher.next { $0["event"] == "state" }
        #expect(cancelled?["state"] == "idle")

        // A listen over a follow-up is a turn of its own, with its own result.
        _ = try await Self.listen(daemon, watcher)
        _ = await watcher.next { $0["event"] == "followUp" }
        _ = await watcher.state("listening")
        let result = try await Self.listen(daemon, watcher)
        #expect(result["response"]?["reply"] == "Which room?")

        _ = await watcher.next { $0["event"] == "followUp" }
        _ = await watcher.state("listening")
        #expect(try await daemon.ctl("mute").status == 0)
        _ = await watcher.state("muted")
        // Unmuted, the satellite waits for the wake word: the follow-up is over.
        #expect(try await daemon.ctl("unmute").status == 0)
        let unmuted = await watcher.next { $0["event"] == "state" }
        #expect(unmuted?["state"] == "idle")
        let kinds = Self.kinds(try await server.socketLog(until: "spoke", count: 3))
        #expect(kinds.filter { $0 == "start" }.count == 3, "a follow-up no one spoke into sent nothing: \(kinds)")
        #expect(await daemon.stop() == 0)
    }
}
