// A speaker and a microphone on two sound cards: their clocks drift apart, so
// the echo canceller is switched off, says why, and what the microphone hears
// while the speaker plays (and the room's echo after) is made silence, since
// nothing would take it out. Real ALSA (the file plugin over the paced test
// card) in a room with an echo (EchoRoom); the one thing mocked is the card
// each PCM is on, since this container has no kernel sound card to open
// (no /proc/asound) and the test card is a plugin, on none.
import CALSA
import Foundation
import Synchronization
import Testing
import TestSupport
import SatelliteCore
@testable import Satellite

@Suite("a speaker and a microphone on two cards", .serialized, .timeLimit(.minutes(2)))
struct TwoCardsTests {
    /// The loudest sample of the stream, until it ends.
    static func loudest(_ chunks: AsyncStream<CaptureChunk>) async -> Int {
        var loudest = 0
        for await chunk in chunks {
            guard case .samples(let samples) = chunk else { break }
            loudest = max(loudest, samples.map { Int($0.magnitude) }.max() ?? 0)
        }
        return loudest
    }

    @Test("the canceller is switched off and says why; over the answer the microphone gives silence; neither is kept open after")
    func twoCards() async throws {
        let directory = try Package.temporaryDirectory("two-cards")
        defer { try? FileManager.default.removeItem(at: directory) }
        let room = try EchoRoom(directory: directory.path, delayMs: 100, gainDB: -6, reverb: [])
        defer { room.stop() }
        let alsa = try ALSAFixture.shared()
        let said = Mutex<[String]>([])
        let engine = AudioEngine()
        engine.process(AudioProcessing(echoCancel: true, noiseSuppression: false, autoGain: false),
                       card: { pcm in snd_pcm_stream(pcm) == SND_PCM_STREAM_PLAYBACK ? 1 : 0 }) { _, message, _ in
            said.withLock { $0.append(message) }
        }
        let bus = EventBus()
        let capture = AudioCapture(device: alsa.microphone(infile: room.microphone), bus: bus, keptPeriod: 1280, engine: engine)
        let playback = Playback(device: alsa.speaker(file: room.speaker), bus: bus, engine: engine, keepOpen: true)
        async let _ = capture.run()
        async let _ = playback.run()

        // The consumer hears the processed microphone; a listener in, what the microphone gave.
        let processed = try await capture.open()
        let raw = try await capture.listenIn(for: .seconds(4))
        let heard = Task { await Self.loudest(processed) }
        let given = Task { await Self.loudest(raw) }
        let tone = PCMAudio(sampleRate: 16000, channels: 1, samples: (0..<16000).map { Int16(12000 * sin(2 * Double.pi * 300 * Double($0) / 16000)) })
        #expect(try await playback.play(tone).ending == .finished)
        // The echo came back into the room, and the microphone gave it (the listener's four seconds end).
        await room.echoed(atLeast: 8000)
        let microphoneGave = await given.value
        await capture.close()
        let consumerHeard = await heard.value

        #expect(said.withLock { $0.contains { $0.contains("are on different cards, whose clocks drift apart; echo cancelling is off") } },
                "the journal says why: \(said.withLock { $0 })")
        #expect(microphoneGave > 2000, "the room's echo reached the microphone: \(microphoneGave)")
        #expect(consumerHeard == 0, "over the answer, the consumer heard silence, not what is left of the echo: \(consumerHeard)")
        #expect(await capture.isKeptOpen == false, "the microphone is not kept open with the canceller off")
        #expect(engine.cancelsEcho == false)
    }
}
