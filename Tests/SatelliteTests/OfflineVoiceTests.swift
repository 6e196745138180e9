// The satellite's own voice from the outside: with the house's server down, a
// real daemon says its notice through espeak-ng on the file-backed speaker, and
// the result says so (`via: "satellite"`) while staying the error it is.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("With the house out of reach, the satellite says so itself", .serialized, .timeLimit(.minutes(2)))
struct OfflineVoiceTests {
    /// The address of a server that was there and is gone.
    func goneServer() async throws -> String {
        let server = try await TestServer.start()
        let url = server.url
        await server.shutdown()
        return url
    }

    func config(_ url: String, transport: String = "record", offline: JSONValue = ["speak": true]) -> JSONValue {
        ["name": "kitchen-pi", "room": "kitchen", "transport": .string(transport), "wake": "push",
         "server": ["url": .string(url), "retryMs": 2000],
         "audio": ["input": "testmic", "output": "testspeaker"], "offline": offline]
    }

    /// Checks that `played` is a spoken sentence: about two seconds, loud enough, not a tone.
    func expectSpeech(_ played: [Int16]) {
        #expect(played.count > 16000 && played.count < 16000 * 5, "\(played.count) samples")
        #expect(Speech.rms(played) > 500, "rms \(Speech.rms(played))")
    }

    @Test("listen: the notice reaches the speaker, and the result is server_unreachable via the satellite", arguments: ["record", "stream"])
    func listen(transport: String) async throws {
        // The room speaks once each turn listens: the microphone, kept open while the echo is cancelled,
        // hears the room as it goes, as a real one does.
        let daemon = try await DaemonHarness.start(config: config(try await goneServer(), transport: transport), token: "t0ken-unused",
                                                   fifoMic: true)
        let question = try await Speech.raw("turn on the radio")
        let watcher = try SocketClient(path: daemon.socket)
        await watcher.watch()
        // A record turn listens first; a stream turn finds the server gone before it listens.
        func speak() async {
            guard transport == "record" else { return }
            #expect(await watcher.state("listening") != nil)
            daemon.room?.say(question)
        }
        let asked = Task { try await daemon.result("listen") }
        await speak()
        let result = try await asked.value
        #expect(result["status"] == "error")
        #expect(result["error"] == "server_unreachable")
        #expect(result["via"] == "satellite")
        #expect(result["message"]?.stringValue?.hasSuffix("The satellite said so itself.") == true)
        expectSpeech(try daemon.playedSound())
        let again = Task { try await daemon.ctl("listen") }
        await speak()
        let human = try await again.value
        #expect(human.status == 1)
        #expect(human.err.contains("The satellite said so itself."))
        #expect(await daemon.stop() == 0)
        // The journal marks it too.
        #expect(daemon.stderr.contains("via=satellite"))
    }

    @Test("ask: the notice is said too, and the state is speaking meanwhile")
    func ask() async throws {
        let daemon = try await DaemonHarness.start(config: config(try await goneServer()), token: "t0ken-unused")
        let watcher = try SocketClient(path: daemon.socket)
        await watcher.watch()
        let asked = Task { try await daemon.result("ask", "is the oven on") }
        #expect(await watcher.state("speaking") != nil)
        let result = try await asked.value
        #expect(result["error"] == "server_unreachable")
        #expect(result["via"] == "satellite")
        expectSpeech(try daemon.playedSound())
        let finished = await watcher.next { $0["event"] == "finished" }
        #expect(finished?["result"]?["via"] == "satellite")
        #expect(await daemon.stop() == 0)
    }

    @Test("offline.speak false: silence, and no via")
    func switchedOff() async throws {
        let daemon = try await DaemonHarness.start(config: config(try await goneServer(), offline: ["speak": false]), token: "t0ken-unused",
                                                   mic: try await Speech.raw("turn on the radio"))
        let result = try await daemon.result("listen")
        #expect(result["error"] == "server_unreachable")
        #expect(result["via"] == nil)
        #expect(((try? daemon.playedSound()) ?? []).isEmpty)
        #expect(await daemon.stop() == 0)
        #expect(!daemon.stderr.contains("via="))
    }

    @Test("a refused token is not the house out of reach: nothing is said")
    func tokenRefused() async throws {
        let server = try await TestServer.start(knobs: ["refuseToken": true])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server.url), token: server.token)
        let result = try await daemon.result("ask", "hello")
        #expect(result["error"] == "token_refused")
        #expect(result["via"] == nil)
        #expect(((try? daemon.playedSound()) ?? []).isEmpty)
        #expect(await daemon.stop() == 0)
    }

    @Test("a voice espeak-ng does not have is a warning naming offline.voice, and the notice is still said")
    func unknownVoice() async throws {
        let daemon = try await DaemonHarness.start(config: config(try await goneServer(), offline: ["voice": "xx-nonexistent"]),
                                                   token: "t0ken-unused")
        let result = try await daemon.result("ask", "hello")
        #expect(result["via"] == "satellite")
        expectSpeech(try daemon.playedSound())
        #expect(await daemon.stop() == 0)
        #expect(daemon.stderr.contains("offline.voice: espeak-ng has no voice \"xx-nonexistent\""))
    }
}
