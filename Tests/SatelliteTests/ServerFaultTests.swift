// A strict server that misbehaves in every way a real one can: each fault is a
// clear error result with the right code, never a crash, and the daemon is not
// left stuck: status answers at once afterwards, in a settled state.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("Server faults are reported, not crashed on", .serialized, .timeLimit(.minutes(2)))
struct ServerFaultTests {
    func config(_ server: TestServer) -> JSONValue {
        ["name": "kitchen-pi", "room": "kitchen", "transport": "record",
         "server": ["url": .string(server.url), "retryMs": 2000],
         "audio": ["input": "testmic", "output": "testspeaker"]]
    }

    struct Fault: Sendable, CustomStringConvertible {
        let knobs: JSONValue
        let error: String
        let words: String
        var description: String { knobs.text }
    }

    static let faults: [Fault] = [
        Fault(knobs: ["refuseToken": true], error: "token_refused", words: "refused the token"),
        Fault(knobs: ["status": 500, "errorText": "the llm fell over"], error: "server_refused", words: "the llm fell over"),
        Fault(knobs: ["status": 429, "errorText": "slow down"], error: "server_refused", words: "slow down"),
        Fault(knobs: ["garbage": "json"], error: "bad_answer", words: "not JSON"),
        Fault(knobs: ["garbage": "html"], error: "bad_answer", words: "/ask"),
        Fault(knobs: ["garbage": "wrong-types"], error: "bad_answer", words: "reply"),
        Fault(knobs: ["closeMidAnswer": true], error: "bad_answer", words: "middle"),
    ]

    @Test("ask: each fault is its own error, and status answers at once afterwards", arguments: faults)
    func askFaults(fault: Fault) async throws {
        let server = try await TestServer.start(knobs: fault.knobs)
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server), token: server.token)
        let result = try await daemon.result("ask", "what", "time", "is", "it")
        #expect(result["status"] == "error")
        #expect(result["error"] == .string(fault.error))
        let message = result["message"]?.stringValue ?? ""
        #expect(message.contains(fault.words), "\(message)")
        #expect(!message.contains(server.token))
        let status = try await daemon.result("status")
        #expect(status["response"]?["state"] != "thinking")
        #expect(await daemon.stop() == 0)
        #expect(!daemon.stderr.contains(server.token))
    }

    @Test("listen: an answer whose audio is not a WAV is bad_answer, and nothing is played", arguments: ["wav", "truncated-wav"])
    func badAudio(kind: String) async throws {
        let server = try await TestServer.start(knobs: ["garbage": .string(kind)])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server), token: server.token,
                                                   mic: try await Speech.raw("turn on the radio"))
        let result = try await daemon.result("listen")
        #expect(result["error"] == "bad_answer")
        #expect(result["message"]?.stringValue?.contains("WAV") == true)
        #expect(((try? daemon.playedSound()) ?? []).isEmpty)
        #expect(await daemon.stop() == 0)
    }

    @Test("a server that is not there is server_unreachable, and the state is offline")
    func unreachable() async throws {
        let server = try await TestServer.start()
        let url = server.url
        server.stop()
        let daemon = try await DaemonHarness.start(
            config: ["transport": "record", "server": ["url": .string(url)], "audio": ["input": "testmic", "output": "testspeaker"]],
            token: "t0ken-unused")
        let result = try await daemon.result("ask", "hello")
        #expect(result["error"] == "server_unreachable")
        let status = try await daemon.result("status")
        #expect(status["response"]?["state"] == "offline")
        #expect(status["response"]?["server"]?["reachable"] == false)
        await daemon.stop()
    }

    @Test("a slow answer can be cancelled: the caller gets cancelled_by_user")
    func cancelWhileThinking() async throws {
        let server = try await TestServer.start(knobs: ["delayMs": 20000])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server), token: server.token,
                                                   mic: try await Speech.raw("what is the weather"))
        let watcher = try SocketClient(path: daemon.socket)
        await watcher.watch()
        let caller = try SocketClient(path: daemon.socket)
        caller.request(.listen(hold: false), id: "l")
        _ = await watcher.state("thinking")
        let cancel = try await daemon.ctl("cancel")
        #expect(cancel.status == 0)
        let result = await caller.result("l")
        #expect(result?["status"] == "cancelled")
        #expect(result?["reason"] == "cancelled_by_user")
        #expect(await watcher.state("idle") != nil)
        await daemon.stop()
    }
}
