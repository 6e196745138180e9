// Every request gets exactly one result: a newer listen supersedes an older
// one (both also told at their callbacks), a missing microphone is an error
// that names it, a held listen ends when the caller's input closes, and
// shutdown answers what is under way.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("Every request gets exactly one result", .serialized, .timeLimit(.minutes(2)))
struct RequestTests {
    func config(_ server: TestServer, _ audio: JSONValue = ["input": "testmic", "output": "testspeaker"]) -> JSONValue {
        ["name": "study", "room": "study", "transport": "record",
         "server": ["url": .string(server.url)], "audio": audio]
    }

    @Test("a second listen supersedes the first: each gets exactly one result, on its socket and at its callback")
    func supersede() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let quiet: JSONValue = ["input": "testmic", "output": "testspeaker", "leadingSilenceMs": 20000, "maxUtteranceMs": 30000]
        let daemon = try await DaemonHarness.start(config: config(server, quiet), token: server.token, mic: Speech.silence(25))
        let watcher = try SocketClient(path: daemon.socket)
        await watcher.watch()
        let first = try SocketClient(path: daemon.socket)
        first.request(.listen(hold: false), id: "1", callback: server.callbackURL("?who=first"))
        _ = await watcher.state("listening")
        let second = try SocketClient(path: daemon.socket)
        second.request(.listen(hold: false), id: "2", callback: server.callbackURL("?who=second"))
        let older = await first.result("1")
        #expect(older?["status"] == "cancelled")
        #expect(older?["reason"] == "superseded")
        _ = await watcher.next { $0["event"] == "notice" && $0["message"] == "Callback delivered." }
        // Stopping the daemon answers the newer one too: shutting_down, and its callback still goes out.
        #expect(await daemon.stop() == 0)
        let newer = await second.result("2")
        #expect(newer?["reason"] == "shutting_down")
        let afterFirst: [JSONValue] = await first.rest().filter { $0["status"] != nil }
        let afterSecond: [JSONValue] = await second.rest().filter { $0["status"] != nil }
        #expect(afterFirst.isEmpty && afterSecond.isEmpty, "more results: \(afterFirst) \(afterSecond)")
        let calls: [String] = try await server.callbacks().compactMap { $0["query"]?.stringValue }
        #expect(calls == ["who=first&status=cancelled&reason=superseded", "who=second&status=cancelled&reason=shutting_down"])
    }

    @Test("a held listen ignores silence and ends when the caller lets go (or at the longest utterance)")
    func hold() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let audio: JSONValue = ["input": "testmic", "output": "testspeaker", "maxUtteranceMs": 3000]
        let daemon = try await DaemonHarness.start(config: config(server, audio), token: server.token,
                                                   mic: try await Speech.raw("play some jazz", after: 20))
        // Nobody lets go: the speech ends after about 1.5 s, yet the capture runs to the 3 s limit.
        let held = try SocketClient(path: daemon.socket)
        held.request(.listen(hold: true), id: "h")
        #expect(await held.result("h")?["status"] == "completed")
        let first = try await server.requests().filter { $0["path"] == "/voice" }
        let heldMs = first.last?["audioMs"]?.numberValue ?? 0
        #expect(abs(heldMs - 3000) <= 200, "held for \(heldMs) ms")

        // Letting go at once sends what little was heard: less than the speech before it.
        let watcher = try SocketClient(path: daemon.socket)
        await watcher.watch()
        let caller = try SocketClient(path: daemon.socket)
        caller.request(.listen(hold: true), id: "h2")
        _ = await watcher.state("listening")
        caller.request(.end, id: "e")
        _ = await caller.result("h2")
        let second = try await server.requests().filter { $0["path"] == "/voice" }
        #expect(second.count == 2)
        #expect((second.last?["audioMs"]?.numberValue ?? 9999) < 500)
        await daemon.stop()
    }

    @Test("parlourctl listen --hold ends the capture when its standard input closes")
    func holdUntilInputCloses() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let audio: JSONValue = ["input": "testmic", "output": "testspeaker", "maxUtteranceMs": 10000]
        let daemon = try await DaemonHarness.start(config: config(server, audio), token: server.token,
                                                   mic: try await Speech.raw("play some jazz", after: 20))
        let watcher = try SocketClient(path: daemon.socket)
        await watcher.watch()
        // Standard input closes once the satellite listens; parlourctl then sends end.
        let done = try await daemon.ctl("--json", "listen", "--hold") { _ = await watcher.state("listening") }
        // What little was heard before letting go is sent; whether the server made words of
        // it depends on how much of the speech came in first, so either result is fine, and
        // parlourctl exits with its code.
        let result = try JSONValue.parse(done.out)
        let status = result["status"]?.stringValue
        #expect(status == "completed" || result["reason"] == "nothing_heard", "\(done.out) \(done.err)")
        #expect(done.status == (status == "completed" ? 0 : 3))
        let posted = try await server.requests().filter { $0["path"] == "/voice" }
        #expect(posted.count == 1)
        // Ended by the caller letting go, far short of the 10 s limit it would otherwise run to.
        let heldMs = posted.last?["audioMs"]?.numberValue ?? 0
        #expect(heldMs < 5000, "held for \(heldMs) ms")
        await daemon.stop()
    }

    @Test("a missing microphone is microphone_unavailable with its name, and the daemon answers")
    func missingMicrophone() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server, ["input": "testmissing", "output": "testspeaker"]),
                                                   token: server.token)
        let done = try await daemon.ctl("listen")
        #expect(done.status == 1)
        #expect(done.err.contains("testmissing"))
        let status = try await daemon.result("status")
        #expect(status["response"]?["microphone"]?["ok"] == false)
        #expect(status["response"]?["microphone"]?["error"]?.stringValue?.isEmpty == false)
        #expect(daemon.stderr.contains("testmissing"))
        await daemon.stop()
    }

    @Test("watch streams the states of a round trip in order")
    func watchStates() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 300])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server), token: server.token,
                                                   mic: try await Speech.raw("good morning"))
        let watcher = try SocketClient(path: daemon.socket)
        await watcher.watch()
        let done = try await daemon.ctl("listen")
        #expect(done.status == 0)
        var states: [String] = []
        while let event = await watcher.next(where: { $0["event"] == "state" }), let state = event["state"]?.stringValue {
            states.append(state)
            if state == "idle" { break }
        }
        #expect(states == ["listening", "thinking", "speaking", "idle"])
        await daemon.stop()
    }
}
