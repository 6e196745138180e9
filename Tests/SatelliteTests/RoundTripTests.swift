// The first whole path, from the outside: a real daemon process, the paced ALSA
// test card under the file plugin, the project's strict test server, and
// parlourctl. What the person said goes to /voice; the answer's audio comes
// out of the speaker.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("A spoken question is answered out loud", .serialized, .timeLimit(.minutes(2)))
struct RoundTripTests {
    static let question = "turn off the kitchen lights"

    func config(_ server: TestServer, _ extra: [String: JSONValue] = [:]) -> JSONValue {
        var fields: [String: JSONValue] = [
            "name": "kitchen-pi", "room": "kitchen", "transport": "record",
            "server": ["url": .string(server.url), "retryMs": 2000],
            "audio": ["input": "testmic", "output": "testspeaker"],
        ]
        fields.merge(extra) { _, new in new }
        return .object(fields)
    }

    @Test("listen records until silence, posts a WAV to /voice and plays the answer")
    func roundTrip() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 1200, "toneHz": 440])
        defer { server.stop() }
        let speech = try await Speech.raw(Self.question)
        let daemon = try await DaemonHarness.start(config: config(server), token: server.token, mic: speech)
        let result = try await daemon.result("listen")
        #expect(result["status"] == "completed")
        #expect(result["response"]?["heard"] == "turn off the kitchen lights")
        #expect(result["response"]?["via"] == "local")
        #expect(result["response"]?["reply"]?.stringValue?.isEmpty == false)

        let voice = try await server.requests().filter { $0["path"] == "/voice" }
        #expect(voice.count == 1)
        #expect(voice.first?["tokenOk"] == true)
        // The recording holds the whole question and ends soon after it (silence 800 ms).
        let speechMs = Double(speech.count / 32) - 2000
        let sentMs = voice.first?["audioMs"]?.numberValue ?? 0
        #expect(sentMs > speechMs - 100 && sentMs < speechMs + 1500, "sent \(sentMs) ms for \(speechMs) ms of speech")

        // The answer came out of the speaker: 1.2 s of 440 Hz, resampled to 16 kHz.
        let played = try daemon.playedSound()
        #expect(abs(played.count - 19200) <= 1600, "played \(played.count) samples")
        #expect(abs(Speech.crossingsPerSecond(played) - 880) < 30)
        #expect(await daemon.stop() == 0)
    }

    @Test("a float32 answer at 24 kHz plays as well as a 16-bit one", arguments: ["float32", "extensible-float32", "pcm24"])
    func floatAnswer(format: String) async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 800, "audioFormat": .string(format), "audioRate": 24000])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server), token: server.token, mic: try await Speech.raw(Self.question))
        let result = try await daemon.result("listen")
        #expect(result["status"] == "completed")
        let played = try daemon.playedSound()
        #expect(abs(played.count - 12800) <= 1600, "played \(played.count) samples")
        #expect(abs(Speech.crossingsPerSecond(played) - 880) < 30)
        await daemon.stop()
    }

    @Test("a silent room gives cancelled / nothing_heard and sends nothing")
    func nothingHeard() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server, ["audio": ["input": "testmic", "output": "testspeaker",
                                                                                      "leadingSilenceMs": 1000]]),
                                                   token: server.token, mic: Speech.silence(3))
        let done = try await daemon.ctl("listen")
        #expect(done.status == 3)
        #expect(done.err.contains("Nothing was heard"))
        #expect(try await server.requests().filter { $0["path"] == "/voice" }.isEmpty)
        await daemon.stop()
    }

    @Test("ask sends the words to /ask with the client and room")
    func ask() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server), token: server.token)
        let done = try await daemon.ctl("ask", "what", "time", "is", "it")
        #expect(done.status == 0)
        #expect(done.out.contains("You asked: what time is it"))
        let asks = try await server.requests().filter { $0["path"] == "/ask" }
        #expect(asks.first?["client"] == "kitchen-pi")
        #expect(asks.first?["room"] == "kitchen")
        await daemon.stop()
    }
}
