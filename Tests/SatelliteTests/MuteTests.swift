// `parlourctl mute` from the outside: the microphone's file is really let go
// (the daemon holds no descriptor on it, as /proc shows), nothing more reaches
// the server, `listen` is refused with `muted`, and all of it holds over a
// restart, where the daemon does not open the microphone even to probe it.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("parlourctl mute closes the microphone", .serialized, .timeLimit(.minutes(2)))
struct MuteTests {
    /// The next watch event whose state is `state`, or the status line a watch starts with when it says so.
    static func state(_ watcher: SocketClient, _ state: String) async -> JSONValue? {
        await watcher.next { ($0["event"] == "state" && $0["state"] == .string(state)) || $0["status"]?["state"] == .string(state) }
    }

    @Test("wake mode: mute releases the microphone, drops what the server was hearing, refuses listen, and holds over a restart")
    func wakeMode() async throws {
        // The server keeps listening for 10 s after speech, so the mute comes while it listens.
        let server = try await TestServer.start(knobs: ["silenceMs": 10000, "maxUtteranceMs": 30000])
        defer { server.stop() }
        let config: JSONValue = ["name": "pi", "room": "hall", "transport": "stream", "wake": "server",
                                 "server": ["url": .string(server.url), "retryMs": 2000],
                                 "audio": ["input": "testmic", "output": "testspeaker"]]
        let daemon = try await DaemonHarness.start(config: config, token: server.token,
                                                   mic: try await Speech.raw("hello there kitchen", before: 0.3, after: 30))
        let mic = daemon.micFile.path
        let watcher = try SocketClient(path: daemon.socket)
        // The server woke on the speech: the microphone is open and streaming. It wakes half a second after
        // READY=1, so a watch begun later already starts at listening, and no listening event follows.
        if await watcher.watch()?["status"]?["state"] != "listening" { _ = await Self.state(watcher, "listening") }
        #expect(daemon.openFiles.contains(mic))

        let muted = try await daemon.ctl("mute")
        #expect(muted.status == 0)
        #expect(muted.out.contains("parlourctl unmute"))
        // Released by the time the result came.
        #expect(!daemon.openFiles.contains(mic), "\(daemon.openFiles)")
        let status = try await daemon.result("status")
        #expect(status["response"]?["muted"] == true)
        #expect(status["response"]?["state"] == "muted")
        #expect(try Data(contentsOf: URL(fileURLWithPath: daemon.stateDirectory + "/settings.json")).count > 0)

        // The socket was reopened, so the server drops the half-heard question instead of answering it later.
        _ = await watcher.next { $0["event"] == "notice" && ($0["message"]?.stringValue?.hasPrefix("Connected") ?? false) }
        let log = try await server.socketLog()
        let firstConnection = log.filter { $0["conn"] == log.first?["conn"] }
        #expect(firstConnection.contains { $0["event"] == "wake" })
        #expect(!log.contains { $0["event"]?.stringValue?.hasPrefix("endpoint") ?? false }, "the server never answered it")

        // listen is refused, saying how to unmute.
        let listen = try await daemon.ctl("listen")
        #expect(listen.status == 1)
        #expect(listen.err.contains("parlourctl unmute"))
        #expect(try await daemon.result("listen")["error"] == "muted")

        // Over a restart: muted from the start, and the microphone is not even probed.
        #expect(await daemon.stop() == 0)
        let again = try await daemon.restart()
        let watch = try SocketClient(path: again.socket)
        let first = await watch.watch()
        #expect(first?["status"]?["muted"] == true)
        #expect(first?["status"]?["state"] == "muted")
        if first?["status"]?["speaker"]?["ok"] == .null { _ = await watch.next { $0["event"] == "speaker" } }
        let probed = try await again.result("status")
        #expect(probed["response"]?["speaker"]?["ok"] == true)
        #expect(probed["response"]?["microphone"]?["ok"] == .null, "the microphone was opened while muted")
        #expect(!again.openFiles.contains(mic))
        #expect(try await again.ctl("listen").status == 1)

        // Unmuted, it streams again: the server wakes on the same speech.
        #expect(try await again.ctl("unmute").status == 0)
        _ = await watch.next { $0["event"] == "muted" && $0["muted"] == false }
        _ = await Self.state(watch, "listening")
        #expect(again.openFiles.contains(mic))
        #expect(try await again.result("status")["response"]?["muted"] == false)
        #expect(await again.stop() == 0)
    }

    @Test("record transport: a mute during a capture drops it, nothing reaches /voice, and unmute lets listen work again")
    func recordTransport() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 300])
        defer { server.stop() }
        let config: JSONValue = ["name": "pi", "transport": "record", "server": ["url": .string(server.url)],
                                 "audio": ["input": "testmic", "output": "testspeaker", "leadingSilenceMs": 20000]]
        // Three seconds of quiet, then the question.
        let daemon = try await DaemonHarness.start(config: config, token: server.token,
                                                   mic: try await Speech.raw("good morning", before: 3, after: 2))
        let watcher = try SocketClient(path: daemon.socket)
        await watcher.watch()
        let listen = Task { try await daemon.result("listen") }
        _ = await Self.state(watcher, "listening")
        #expect(try await daemon.ctl("mute").status == 0)
        let result = try await listen.value
        #expect(result["error"] == "muted")
        #expect(result["message"]?.stringValue?.contains("nothing was sent") == true)
        #expect(!daemon.openFiles.contains(daemon.micFile.path))
        #expect(try await server.requests().filter { $0["path"] == "/voice" }.isEmpty)

        #expect(try await daemon.ctl("unmute").status == 0)
        let again = try await daemon.result("listen")
        #expect(again["status"] == "completed")
        #expect(try await server.requests().filter { $0["path"] == "/voice" }.count == 1)
        #expect(await daemon.stop() == 0)
    }

    @Test("an answer already playing when mute comes plays to its end")
    func answerPlaysOn() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 2000])
        defer { server.stop() }
        let config: JSONValue = ["name": "pi", "transport": "record", "server": ["url": .string(server.url)],
                                 "audio": ["input": "testmic", "output": "testspeaker"]]
        let daemon = try await DaemonHarness.start(config: config, token: server.token, mic: try await Speech.raw("good morning"))
        let watcher = try SocketClient(path: daemon.socket)
        await watcher.watch()
        let listen = Task { try await daemon.result("listen") }
        _ = await Self.state(watcher, "speaking")
        #expect(try await daemon.ctl("mute").status == 0)
        #expect(try await listen.value["status"] == "completed")
        let played = try daemon.playedSound()
        #expect(played.count >= 16000 * 19 / 10, "played \(played.count) samples of 2 s")
        _ = await Self.state(watcher, "muted")
        #expect(await daemon.stop() == 0)
    }

    @Test("a broken settings.json starts the daemon muted, and says so")
    func brokenFileMutes() async throws {
        let daemon = try await DaemonHarness.start(config: ["transport": "record"])
        #expect(await daemon.stop() == 0)
        try "{not json".write(toFile: daemon.stateDirectory + "/settings.json", atomically: true, encoding: .utf8)
        let again = try await daemon.restart()
        let status = try await again.result("status")
        #expect(status["response"]?["muted"] == true)
        #expect(again.stderr.contains("settings.json cannot be read"))
        // unmute writes the file afresh.
        #expect(try await again.ctl("unmute").status == 0)
        let file = try LocalSettings.decode(FileSystem.read(again.stateDirectory + "/settings.json"), file: "")
        #expect(file == LocalSettings(muted: false))
        #expect(await again.stop() == 0)
    }
}
