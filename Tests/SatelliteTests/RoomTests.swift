// `parlourctl room` from the outside: a real daemon and the project's test
// server, whose request log shows the room of every /voice and /listen. The
// room must reach the server from the next request on, outlive a restart, give
// way to an edited config, and (on the stream transport) never cost a turn.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("parlourctl room changes the room from the next request on", .serialized, .timeLimit(.minutes(2)))
struct RoomTests {
    static func config(_ server: TestServer, room: String, transport: String, wake: String = "push") -> JSONValue {
        ["name": "pi", "room": .string(room), "transport": .string(transport), "wake": .string(wake),
         "server": ["url": .string(server.url), "retryMs": 2000],
         "audio": ["input": "testmic", "output": "testspeaker", "leadingSilenceMs": 4000]]
    }

    @Test("record transport: /voice names the new room, status and watch say it, and it outlives a restart")
    func recordTransport() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 200])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server, room: "hall", transport: "record"),
                                                   token: server.token, mic: try await Speech.raw("good morning"))
        let watcher = try SocketClient(path: daemon.socket)
        await watcher.watch()
        let set = try await daemon.ctl("room", "study")
        #expect(set.status == 0)
        #expect(set.out.contains("study"))
        let event = await watcher.next { $0["event"] == "room" }
        #expect(event?["room"] == "study")
        #expect(try await daemon.result("status")["response"]?["room"] == "study")
        let read = try await daemon.result("room")
        #expect(read["response"]?["room"] == "study")
        #expect(read["response"]?["configRoom"] == "hall")
        #expect(read["response"]?["source"] == "parlourctl")

        #expect(try await daemon.ctl("listen").status == 0)
        let voice = try await server.requests().filter { $0["path"] == "/voice" }
        #expect(voice.last?["room"] == "study")

        // Over a restart.
        #expect(await daemon.stop() == 0)
        let again = try await daemon.restart()
        #expect(try await again.result("status")["response"]?["room"] == "study")
        #expect(try await again.ctl("listen").status == 0)
        #expect(try await server.requests().filter { $0["path"] == "/voice" }.last?["room"] == "study")

        // --reset gives the config's room back.
        let reset = try await again.result("room", "--reset")
        #expect(reset["response"]?["room"] == "hall")
        #expect(reset["response"]?["source"] == "config")
        #expect(await again.stop() == 0)
    }

    @Test("an edit of the config's room wins over a room set before it")
    func configEditWins() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server, room: "hall", transport: "record"), token: server.token)
        #expect(try await daemon.ctl("room", "study").status == 0)
        #expect(await daemon.stop() == 0)

        // Restarted with the config unchanged, parlourctl's room holds.
        let same = try await daemon.restart()
        #expect(try await same.result("status")["response"]?["room"] == "study")
        #expect(await same.stop() == 0)

        // The admin edits the config's room: it counts from the next start.
        let file = daemon.dir.appendingPathComponent("satellite.json")
        var config = try JSONValue.parse(Data(contentsOf: file))
        if case .object(var fields) = config {
            fields["room"] = "den"
            config = .object(fields)
        }
        try config.prettyText.write(to: file, atomically: true, encoding: .utf8)
        let edited = try await daemon.restart()
        #expect(try await edited.result("status")["response"]?["room"] == "den")
        #expect(edited.stderr.contains("the config's room is used"))
        #expect(await edited.stop() == 0)
    }

    @Test("stream transport: the socket reopens with the new room, after the turn under way has its answer")
    func streamTransport() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 400, "replyText": "Done."])
        defer { server.stop() }
        // Push mode opens the microphone for the turn alone; the question comes after 2 s of quiet.
        // (A file, not a FIFO: the microphone must open after the restart too.)
        let daemon = try await DaemonHarness.start(config: Self.config(server, room: "hall", transport: "stream"), token: server.token,
                                                   mic: try await Speech.raw("turn off the kitchen lights", before: 2, after: 1.5))
        let watcher = try SocketClient(path: daemon.socket)
        if await watcher.watch()?["status"]?["state"] != "idle" { _ = await watcher.state("idle") }

        // A push turn is under way when the room changes: it is not cut off.
        let listen = Task { try await daemon.result("listen") }
        _ = await watcher.state("listening")
        #expect(try await daemon.ctl("room", "study").status == 0)
        let result = try await listen.value
        #expect(result["status"] == "completed")
        #expect(result["response"]?["reply"] == "Done.")

        // Then the socket is reopened, and the server sees the new room.
        _ = await watcher.next { $0["event"] == "notice" && ($0["message"]?.stringValue?.hasPrefix("Connected") ?? false) }
        let upgrades = try await server.requests().filter { $0["path"] == "/listen" }
        #expect(upgrades.map { $0["room"] } == ["hall", "study"])
        // The turn ran whole on the first connection.
        let log = try await server.socketLog()
        let first = log.filter { $0["conn"] == log.first?["conn"] && $0["dir"] == "in" }.compactMap { $0["type"]?.stringValue }
        #expect(first == ["start", "end", "spoke"], "\(first)")

        // And over a restart the first connection already names it.
        #expect(await daemon.stop() == 0)
        let again = try await daemon.restart()
        let watch = try SocketClient(path: again.socket)
        if await watch.watch()?["status"]?["state"] != "idle" { _ = await watch.state("idle") }

        #expect(try await server.requests().filter { $0["path"] == "/listen" }.last?["room"] == "study")
        #expect(await again.stop() == 0)
    }
}
