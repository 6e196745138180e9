// The speaker against real ALSA: replies at other rates and layouts go through
// a `plug` speaker that is a 16 kHz mono card, and land in a file through the
// paced test card, so length, pitch and cancelling are measured on real output.
import Foundation
import Glibc
import Synchronization
import Testing
import SatelliteCore
@testable import Satellite

@Suite("speaker playback")
struct PlaybackTests {
    /// A sine made as floats, as a decoded reply would be, then converted to 16 bits.
    private func tone(hz: Double, rate: Int, channels: Int, seconds: Double) -> PCMAudio {
        let frames = Int(Double(rate) * seconds)
        var samples: [Int16] = []
        samples.reserveCapacity(frames * channels)
        for i in 0..<frames {
            let value = Float(0.5 * sin(2 * Double.pi * hz * Double(i) / Double(rate)))
            let sample = Int16(value * Float(Int16.max))
            for _ in 0..<channels { samples.append(sample) }
        }
        return PCMAudio(sampleRate: rate, channels: channels, samples: samples)
    }

    /// Upward zero crossings: one a cycle.
    private func cycles(_ samples: [Int16]) -> Int {
        zip(samples, samples.dropFirst()).filter { $0 < 0 && $1 >= 0 }.count
    }

    @Test("a reply plays through the 16 kHz mono plug speaker with its length and pitch",
          .timeLimit(.minutes(1)), arguments: [(rate: 24000, channels: 1, hz: 440.0, seconds: 1.0), (rate: 48000, channels: 2, hz: 300.0, seconds: 0.5)])
    func playsConverted(format: (rate: Int, channels: Int, hz: Double, seconds: Double)) async throws {
        let alsa = try ALSAFixture.shared()
        let file = alsa.path("played.raw")
        let audio = tone(hz: format.hz, rate: format.rate, channels: format.channels, seconds: format.seconds)
        let playback = Playback(device: alsa.speaker(file: file), bus: EventBus())
        async let _ = playback.run()

        let outcome = try await playback.play(audio)
        #expect(outcome == PlaybackOutcome(ending: .finished, framesWritten: audio.frameCount))

        let played = try alsa.readRaw(file)
        let expected = Int(16000 * format.seconds)
        #expect(abs(played.count - expected) <= 320, "played \(played.count) frames at 16 kHz, expected \(expected)")
        let expectedCycles = Int(format.hz * format.seconds)
        #expect(abs(cycles(played) - expectedCycles) <= 2, "played \(cycles(played)) cycles, expected \(expectedCycles)")
    }

    @Test("a 22.05 kHz reply that is not a whole number of periods ends when played (espeak-ng's rate, and say's)",
          .timeLimit(.minutes(1)))
    func oddLengthConverted() async throws {
        let alsa = try ALSAFixture.shared()
        let file = alsa.path("played.raw")
        // 38641 frames: what espeak-ng says for the offline notice. Behind plug's rate converter the card
        // underruns on the last partial period while snd_pcm_delay still reports it, which was waited on for ever.
        let audio = tone(hz: 300, rate: 22050, channels: 1, seconds: 38641.0 / 22050)
        let playback = Playback(device: alsa.speaker(file: file), bus: EventBus())
        async let _ = playback.run()
        #expect(try await playback.play(audio).ending == .finished)
        // At most the partial period the converter held back is missing.
        let played = try alsa.readRaw(file)
        #expect(played.count <= 28039 && played.count > 28039 - 2 * 320, "played \(played.count) frames at 16 kHz")
    }

    @Test("a 16 kHz mono reply reaches the card sample for sample", .timeLimit(.minutes(1)))
    func playsUnchanged() async throws {
        let alsa = try ALSAFixture.shared()
        let file = alsa.path("played.raw")
        let audio = tone(hz: 250, rate: 16000, channels: 1, seconds: 0.3)
        let playback = Playback(device: alsa.rawSpeaker(file: file), bus: EventBus())
        async let _ = playback.run()
        #expect(try await playback.play(audio).ending == .finished)
        #expect(try alsa.readRaw(file) == audio.samples)
    }

    @Test("cancel() stops a long reply early", .timeLimit(.minutes(1)))
    func cancelStops() async throws {
        let alsa = try ALSAFixture.shared()
        let file = alsa.path("played.raw")
        let bus = EventBus()
        var events = bus.subscribe().makeAsyncIterator()
        let playback = Playback(device: alsa.speaker(file: file), bus: bus)
        async let _ = playback.run()
        let audio = tone(hz: 440, rate: 24000, channels: 1, seconds: 5)

        let playing = Task { try await playback.play(audio) }
        // The speaker is published as working once it is open and the reply is under way.
        #expect(await events.nextSpeaker()?.ok == true)
        await playback.cancel()
        let outcome = try await playing.value

        #expect(outcome.ending == .cancelled)
        #expect(outcome.framesWritten < audio.frameCount / 2)
        // What reached the card is far short of the five seconds (16 kHz, 2 bytes a frame, at the
        // card): under half, however late a loaded machine lets the cancel land.
        #expect(try alsa.readRaw(file).count < 5 * 16000 * 2 / 2)
    }

    @Test("a newer reply cancels the one playing", .timeLimit(.minutes(1)))
    func newerReplyWins() async throws {
        let alsa = try ALSAFixture.shared()
        let file = alsa.path("played.raw")
        let bus = EventBus()
        var events = bus.subscribe().makeAsyncIterator()
        let playback = Playback(device: alsa.speaker(file: file), bus: bus)
        async let _ = playback.run()

        let long = Task { try await playback.play(tone(hz: 440, rate: 24000, channels: 1, seconds: 5)) }
        #expect(await events.nextSpeaker()?.ok == true)
        let short = tone(hz: 300, rate: 16000, channels: 1, seconds: 0.2)
        let second = try await playback.play(short)
        let first = try await long.value

        #expect(first.ending == .cancelled)
        #expect(second == PlaybackOutcome(ending: .finished, framesWritten: short.frameCount))
        #expect(abs(try alsa.readRaw(file).count - short.frameCount) <= 320)
    }

    /// Playback's `finished` names the device (its first frame's time); kept after the device
    /// ended, the two held each other and every reply and cue played stayed in memory.
    @Test("a speaker that has played is freed, though its closure names it", .timeLimit(.minutes(1)))
    func playedDeviceIsFreed() async throws {
        let alsa = try ALSAFixture.shared()
        weak var freed: ALSAPlaybackDevice?
        do {
            let speaker = try ALSAPlaybackDevice.open(device: alsa.speaker(file: alsa.path("freed.raw")), rate: 16000, channels: 1)
            freed = speaker
            let outcome: Result<PlaybackOutcome, ALSAError> = await withCheckedContinuation { done in
                speaker.start(tone(hz: 440, rate: 16000, channels: 1, seconds: 0.1), isCancelled: { speaker.periodFrames < 0 }) { result in
                    _ = speaker.firstFrameMonotonicNs
                    done.resume(returning: result)
                }
            }
            #expect((try? outcome.get().ending) == .finished)
        }
        // The audio thread lets go of a side at the end of the wake-up that ended it: a job it
        // runs after that wake-up has come back once that is done.
        _ = try await AudioEngine.shared.run { () throws(ALSAError) in 0 }
        #expect(freed == nil, "something still holds the speaker after it played")
    }

    @Test("the device notices a cancel at the next period", .timeLimit(.minutes(1)))
    func deviceChecksEveryPeriod() async throws {
        let alsa = try ALSAFixture.shared()
        let speaker = try ALSAPlaybackDevice.open(device: alsa.speaker(file: alsa.path("played.raw")), rate: 24000, channels: 1)
        defer { speaker.close() }
        #expect(speaker.periodFrames == 480)
        let checks = Atomic<Int>(0)
        let outcome = try await speaker.play(tone(hz: 440, rate: 24000, channels: 1, seconds: 5)) {
            checks.add(1, ordering: .relaxed).newValue > 20
        }
        #expect(outcome.ending == .cancelled)
        // At most one period is written between two checks.
        #expect(outcome.framesWritten <= 20 * speaker.periodFrames)
    }

    @Test("a speaker that does not exist fails at open, and is reported with ALSA's reason", .timeLimit(.minutes(1)))
    func missingSpeaker() async throws {
        let alsa = try ALSAFixture.shared()
        let bus = EventBus()
        var events = bus.subscribe().makeAsyncIterator()
        let playback = Playback(device: alsa.missing, bus: bus)
        async let _ = playback.run()

        await #expect(throws: ALSAError(function: "snd_pcm_open", code: -ENOENT, device: alsa.missing)) {
            try await playback.play(tone(hz: 440, rate: 16000, channels: 1, seconds: 0.1))
        }
        let broken = await events.nextSpeaker()
        #expect(broken == DeviceHealth(device: alsa.missing, ok: false, error: "No such file or directory"))
        #expect(SatelliteEvent.speaker(broken!).message == "The speaker testmissing cannot be used: No such file or directory.")
        #expect(await playback.probe() == broken)
    }

    @Test("a speaker that fails while playing is reported, and reported again once it works", .timeLimit(.minutes(1)))
    func failsWhilePlaying() async throws {
        // The file plugin opens its output lazily and, when it cannot, fails the
        // writes with -EIO, as a card that vanished mid-reply would. Its open and
        // parameters still succeed, so the retry's probe finds it working at once;
        // the directory is created so the next reply really plays.
        let alsa = try ALSAFixture.shared()
        let directory = alsa.path("later")
        let name = alsa.speaker(file: "\(directory)/played.raw")
        let bus = EventBus()
        var events = bus.subscribe().makeAsyncIterator()
        let playback = Playback(device: name, bus: bus, retry: Backoff(first: .milliseconds(50), cap: .milliseconds(200)))
        async let _ = playback.run()

        await #expect(throws: ALSAError(function: "snd_pcm_writei", code: -EIO, device: name)) {
            try await playback.play(tone(hz: 440, rate: 16000, channels: 1, seconds: 2))
        }
        #expect(await events.nextSpeaker() == DeviceHealth(device: name, ok: true))
        #expect(await events.nextSpeaker() == DeviceHealth(device: name, ok: false, error: "Input/output error"))

        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        #expect(await events.nextSpeaker() == DeviceHealth(device: name, ok: true))
        #expect(try await playback.play(tone(hz: 440, rate: 16000, channels: 1, seconds: 0.1)).ending == .finished)
    }
}

@Suite("the speaker kept open while the echo is cancelled")
struct SteadySpeakerTests {
    private func tone(hz: Double, rate: Int, seconds: Double) -> PCMAudio {
        PCMAudio(sampleRate: rate, channels: 1, samples: (0..<Int(Double(rate) * seconds)).map {
            Int16(16000 * sin(2 * Double.pi * hz * Double($0) / Double(rate)))
        })
    }

    /// The runs of sound in `samples`, each as long as it is (silence between them dropped).
    private func sounds(_ samples: [Int16]) -> [Int] {
        var runs: [Int] = [], current = 0, quiet = 0
        for sample in samples {
            if sample == 0 { quiet += 1 } else { quiet = 0 }
            if quiet < 160 {
                current += 1
            } else if current > 0 {
                if current > 159 { runs.append(current - 159) }
                current = 0
            }
        }
        if current > 0 { runs.append(current) }
        return runs
    }

    /// A file speaker keeps only what was played since it was last opened: every answer in it, silence
    /// between, is one opening for all. A cancel takes back what of the answer was queued.
    @Test("one opening plays every answer, silence between, and a cancel stops one at once", .timeLimit(.minutes(1)))
    func oneOpening() async throws {
        let alsa = try ALSAFixture.shared()
        let file = alsa.path("steady.raw")
        let engine = AudioEngine()
        engine.process(AudioProcessing(echoCancel: true, noiseSuppression: false, autoGain: false)) { _, _, _ in }
        let bus = EventBus()
        let playback = Playback(device: alsa.speaker(file: file), bus: bus, engine: engine, keepOpen: true)
        async let _ = playback.run()
        #expect(await playback.probe().ok == true)

        let first = tone(hz: 440, rate: 24000, seconds: 0.5)
        #expect(try await playback.play(first) == PlaybackOutcome(ending: .finished, framesWritten: first.frameCount))
        var events = bus.subscribe().makeAsyncIterator()
        let handed = MonotonicClock.nanoseconds()
        let long = Task { try await playback.play(tone(hz: 300, rate: 16000, seconds: 5)) }
        while let event = await events.next() {
            if case .notice(_, let message, _) = event, message == "First frame handed to ALSA." { break }
        }
        await playback.cancel()
        #expect(try await long.value.ending == .cancelled)
        // At most what the card played from the first frame until the cancel was seen (a loaded
        // machine takes longer to see it), and the period kept queued; not the buffer's 160 ms more.
        let cancelledMs = Int((MonotonicClock.nanoseconds() - handed) / 1_000_000)
        // The file plugin writes what is played once a buffer more has been written after it: the
        // speaker goes on with silence, so the second answer's first frames are in the file once the
        // next answer (a short one) has been heard.
        _ = try await playback.play(tone(hz: 200, rate: 16000, seconds: 0.2))
        let runs = sounds(try alsa.readRaw(file))
        #expect(runs.count >= 2, "every answer in the one file, silence between: \(runs)")
        #expect(abs((runs.first ?? 0) - 8000) <= 320, "the first whole, at the card's 16 kHz: \(runs)")
        #expect(abs((runs.last ?? 0) - 3200) <= 320, "the last whole: \(runs)")
        // Cancelled as its first frame was written: what was queued is taken back, so little or none
        // of it is heard, far from its five seconds.
        #expect(runs.dropFirst().dropLast().reduce(0, +) <= (cancelledMs + 40) * 16,
                "the cancelled one stopped at once, \(cancelledMs) ms after it was handed on: \(runs)")
    }

    /// Kept full, the speaker has a buffer of silence queued (eight 20 ms periods); a sound takes all
    /// but one back, so it is heard a period after it was written, not a buffer after.
    @Test("an answer starts a period after it is written, not behind the silence queued", .timeLimit(.minutes(1)))
    func startsAtOnce() async throws {
        let alsa = try ALSAFixture.shared()
        let engine = AudioEngine()
        engine.process(AudioProcessing(echoCancel: true, noiseSuppression: false, autoGain: false)) { _, _, _ in }
        let bus = EventBus()
        let playback = Playback(device: alsa.speaker(file: alsa.path("steady-start.raw")), bus: bus, engine: engine, keepOpen: true)
        async let _ = playback.run()
        #expect(await playback.probe().ok == true)
        var events = bus.subscribe().makeAsyncIterator()
        for _ in 0..<3 {
            let answer = Task { try await playback.play(tone(hz: 440, rate: 16000, seconds: 0.3)) }
            var queuedMs: UInt64?
            while let event = await events.next() {
                if case .notice(_, "First frame handed to ALSA.", let fields) = event,
                   let written = fields["monotonic_ns"].flatMap(UInt64.init), let heard = fields["heard_monotonic_ns"].flatMap(UInt64.init) {
                    queuedMs = (heard - min(heard, written)) / 1_000_000
                    break
                }
            }
            _ = try await answer.value
            print("FIGURE steady-speaker queued_before_first_frame_ms=\(queuedMs ?? 0)")
            // What was queued before it, by the card's own count (snd_pcm_delay), not a clock's wait.
            #expect((queuedMs ?? .max) <= 40, "queued ahead of the answer: \(queuedMs.map(String.init) ?? "nothing told") ms")
        }
    }
}
