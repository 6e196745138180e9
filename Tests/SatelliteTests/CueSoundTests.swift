// The cue sounds from the outside: a real daemon plays them on the paced test
// card's speaker that keeps every playback, so the test reads all, in order, and
// each sound is recognised by its exact samples. The awake sound plays while
// the microphone already records: what is said over it reaches the server.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("Cue sounds mark listening, its end and errors", .serialized, .timeLimit(.minutes(2)))
struct CueSoundTests {
    static let question = "turn off the kitchen lights"

    func config(_ server: TestServer, transport: String = "record", sounds: JSONValue = ["awake": "builtin", "done": "builtin", "error": "builtin"]) -> JSONValue {
        ["name": "kitchen-pi", "room": "kitchen", "transport": .string(transport), "wake": "push",
         "server": ["url": .string(server.url), "retryMs": 2000],
         // Echo cancelling off: the speaker is opened for each sound, so the file holds them back to back
         // (kept open, it plays silence between them; the order is Playback's either way).
         "audio": ["input": "testmic", "output": "testspeakerlog", "leadingSilenceMs": 4000, "echoCancel": false],
         "sounds": sounds]
    }

    /// Whether `played` holds `sound` exactly at `offset`.
    static func holds(_ played: [Int16], _ sound: PCMAudio, at offset: Int) -> Bool {
        offset + sound.samples.count <= played.count && Array(played[offset..<offset + sound.samples.count]) == sound.samples
    }

    @Test("listen: the awake sound, the done sound, then the answer")
    func answered() async throws {
        // The server takes a moment, as a real one does, so the done sound is not cut short by the answer.
        let server = try await TestServer.start(knobs: ["audioMs": 600, "toneHz": 300, "delayMs": 500])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server), token: server.token, mic: try await Speech.raw(Self.question))
        let result = try await daemon.result("listen")
        #expect(result["status"] == "completed")
        let played = try daemon.playedInOrder()
        let awake = Cue.awake.builtin, done = Cue.done.builtin
        try #require(played.count > awake.samples.count + done.samples.count, "played \(played.count) samples; \(daemon.stderr)")
        #expect(Self.holds(played, awake, at: 0), "the awake sound comes first")
        #expect(Self.holds(played, done, at: awake.samples.count), "then the done sound")
        let answer = Array(played[(awake.samples.count + done.samples.count)...])
        #expect(abs(answer.count - 9600) <= 800, "then 600 ms of answer, \(answer.count) samples")
        #expect(abs(Speech.crossingsPerSecond(answer) - 600) < 30)
        #expect(await daemon.stop() == 0)
    }

    @Test("listen that ends in an error: the awake sound, the done sound, then the error sound")
    func error() async throws {
        let server = try await TestServer.start(knobs: ["status": 500, "errorText": "the llm fell over", "delayMs": 400])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server), token: server.token, mic: try await Speech.raw(Self.question))
        let result = try await daemon.result("listen")
        #expect(result["error"] == "server_refused")
        #expect(result["via"] == nil)
        // The result comes once the error sound has been heard.
        let played = try daemon.playedInOrder()
        let expected = Cue.awake.builtin.samples + Cue.done.builtin.samples + Cue.error.builtin.samples
        #expect(played.count == expected.count, "played \(played.count) samples; \(daemon.stderr)")
        #expect(played == expected, "the three sounds, whole and in order")
        #expect(await daemon.stop() == 0)
    }

    @Test("a sound switched off with \"\" is not played; a WAV file of one's own is", arguments: ["record", "stream"])
    func ownSound(transport: String) async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 400, "toneHz": 300, "delayMs": 300])
        defer { server.stop() }
        let dir = try Package.temporaryDirectory("cue")
        // One second of a quiet 2 kHz tone: long enough that dropping what the microphone heard over it would show.
        let ding = PCMAudio(sampleRate: 16000, channels: 1, samples: (0..<16000).map { Int16(3000 * sin(2 * Double.pi * 2000 * Double($0) / 16000)) })
        let dingPath = dir.appendingPathComponent("ding.wav").path
        try Data(WAV.encode(ding)).write(to: URL(fileURLWithPath: dingPath))
        let daemon = try await DaemonHarness.start(
            config: config(server, transport: transport, sounds: ["awake": .string(dingPath), "done": "", "error": ""]),
            token: server.token, liveMic: true)
        let watcher = try SocketClient(path: daemon.socket)
        let status = await watcher.watch()
        if status?["status"]?["state"] != "idle" { _ = await watcher.state("idle") }

        // The person speaks the moment listening starts, over the awake sound.
        let speech = try Speech.recording(Self.question, leadingMs: 0, trailingMs: 1500)
        let listen = Task { try await daemon.result("listen") }
        _ = await watcher.state("listening")
        daemon.room?.say(speech.samples.withUnsafeBufferPointer { Data(buffer: $0) })
        let result = try await listen.value
        #expect(result["status"] == "completed")

        let played = try daemon.playedInOrder()
        try #require(played.count > ding.samples.count, "played \(played.count) samples; \(daemon.stderr)")
        #expect(Self.holds(played, ding, at: 0), "the own sound played first")
        let answer = Array(played[ding.samples.count...])
        #expect(abs(Speech.crossingsPerSecond(answer) - 600) < 30, "then the answer, and no done sound")

        // What was said over the sound reached the server whole: first and last loud frames as far apart as the speech.
        // Where the speech starts in the upload is not asserted: that is when this test wrote it after seeing
        // `listening`, which a loaded machine delays (a CI run had it 800 ms in).
        let heard: JSONValue?
        if transport == "record" {
            heard = try await server.requests().last { $0["path"] == "/voice" }
        } else {
            heard = try await server.socketLog().last { $0["dir"] == "event" && $0["event"] == "utterance" }
        }
        let first = try #require(heard?["firstLoudMs"]?.numberValue)
        let last = try #require(heard?["lastLoudMs"]?.numberValue)
        let spoken = Double(speech.speechEndMs - speech.speechStartMs)
        #expect(last - first > spoken - 300, "\(last - first) ms between the first and last loud frames, of \(spoken) ms spoken")
        #expect(await daemon.stop() == 0)
    }
}
