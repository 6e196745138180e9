// The microphone and the speaker on one audio thread (AudioEngine), against the
// paced test card: what one side does (an underrun at the end of a 22.05 kHz
// reply, a consumer that falls behind) must never hold up the other.
import Foundation
import Testing
import SatelliteCore
import Satellite

@Suite("one audio thread for the microphone and the speaker")
struct AudioEngineTests {
    private func ramp(_ count: Int) -> [Int16] { (0..<count).map { Int16(truncatingIfNeeded: $0 * 7) } }

    private func tone(rate: Int, seconds: Double) -> PCMAudio {
        let samples = (0..<Int(Double(rate) * seconds)).map { Int16(8000 * sin(2 * Double.pi * 440 * Double($0) / Double(rate))) }
        return PCMAudio(sampleRate: rate, channels: 1, samples: samples)
    }

    @Test("the microphone goes on, in order, while the speaker on the same thread plays and underruns at its end",
          .timeLimit(.minutes(1)), arguments: [0, 16000, 22050])
    func speakerDoesNotStallMicrophone(rate: Int) async throws {
        let alsa = try ALSAFixture.shared()
        let engine = AudioEngine()
        let samples = ramp(32000)
        let infile = alsa.path("ramp.raw")
        try alsa.writeRaw(samples, to: infile)
        let microphone = try ALSACaptureDevice.open(device: alsa.microphone(infile: infile), engine: engine)
        let frames = microphone.frames()
        let collected = Task {
            var got: [Int16] = []
            for await chunk in frames {
                guard case .samples(let s) = chunk else { Issue.record("unexpected \(chunk)"); break }
                got += s
                if got.count >= 60 * 320 { break }
            }
            return got
        }
        // 22.05 kHz through plug, not a whole number of periods, ends in an underrun; 0 is no speaker.
        if rate > 0 {
            let reply = tone(rate: rate, seconds: 0.33)
            let speaker = try ALSAPlaybackDevice.open(device: alsa.speaker(file: alsa.path("played.raw")), rate: rate,
                                                      channels: 1, engine: engine)
            let outcome = try await speaker.play(reply) { false }
            #expect(outcome == PlaybackOutcome(ending: .finished, framesWritten: reply.frameCount))
        }
        // The microphone delivered through the reply and after it.
        let captured = await collected.value
        #expect(captured.count == 60 * 320)
        if microphone.overruns == 0 {
            #expect(captured == Array(samples.prefix(60 * 320)))
        }
        // The test still holds the stream, so leaving the loop did not stop the device.
        microphone.stop()
        await microphone.closed()
    }

    @Test("the speaker plays every frame while a microphone on the same thread has a consumer that never reads",
          .timeLimit(.minutes(1)))
    func microphoneDoesNotStallSpeaker() async throws {
        let alsa = try ALSAFixture.shared()
        let engine = AudioEngine()
        let infile = alsa.path("ramp.raw")
        try alsa.writeRaw(ramp(16000), to: infile)
        let microphone = try ALSACaptureDevice.open(device: alsa.microphone(infile: infile), engine: engine)
        let unread = microphone.frames()
        let file = alsa.path("played.raw")
        let reply = tone(rate: 16000, seconds: 3)
        let speaker = try ALSAPlaybackDevice.open(device: alsa.speaker(file: file), rate: 16000, channels: 1, engine: engine)
        let outcome = try await speaker.play(reply) { false }
        #expect(outcome == PlaybackOutcome(ending: .finished, framesWritten: reply.frameCount))
        #expect(try alsa.readRaw(file) == reply.samples)
        // Three seconds unread: the stream kept the newest two and counted what it dropped.
        #expect(microphone.overruns > 0)
        microphone.stop()
        for await _ in unread {}
        await microphone.closed()
    }
}
