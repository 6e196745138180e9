import Foundation
import Testing
import TestSupport
@testable import ControlCore
@testable import SatelliteCore

/// Synthetic microphone signals, built frame-aligned so the rules can be checked to the frame.
enum Signal {
    static func silence(_ ms: Int, rate: Int = 16_000) -> [Int16] { [Int16](repeating: 0, count: ms * rate / 1000) }

    /// A sine whose RMS is `dBFS`, faded in and out over 5 ms as a voice would be:
    /// a sine cut off mid-swing is a click of its own.
    static func tone(_ ms: Int, hz: Double = 440, dBFS: Double = -20, rate: Int = 16_000) -> [Int16] {
        let amplitude = 32768 * pow(10, dBFS / 20) * 2.0.squareRoot()
        let count = ms * rate / 1000
        let fade = Double(rate / 200)
        return (0..<count).map { index in
            let edge = min(Double(min(index, count - 1 - index)) / fade, 1)
            let value = amplitude * edge * sin(2 * .pi * hz * Double(index) / Double(rate))
            return Int16(clamping: Int(value.rounded()))
        }
    }

    /// Deterministic white noise whose RMS is about `dBFS`.
    static func noise(_ ms: Int, dBFS: Double, rate: Int = 16_000, seed: UInt64 = 1) -> [Int16] {
        var generator = SeededGenerator(seed: seed)
        // Uniform on [-a, a] has RMS a/√3.
        let amplitude = 32768 * pow(10, dBFS / 20) * 3.0.squareRoot()
        return (0..<ms * rate / 1000).map { _ in Int16(clamping: Int(Double.random(in: -amplitude...amplitude, using: &generator))) }
    }

    /// Syllable-like bursts: `on` ms of tone, `off` ms of silence, for `ms` in all.
    static func babble(_ ms: Int, on: Int = 200, off: Int = 100, rate: Int = 16_000) -> [Int16] {
        var out: [Int16] = []
        while out.count < ms * rate / 1000 { out += tone(on, rate: rate) + silence(off, rate: rate) }
        return Array(out.prefix(ms * rate / 1000))
    }

    /// Adds two signals sample by sample, the shorter one padded with silence.
    static func mix(_ a: [Int16], _ b: [Int16]) -> [Int16] {
        (0..<max(a.count, b.count)).map { Int16(clamping: Int(a.indices.contains($0) ? a[$0] : 0) + Int(b.indices.contains($0) ? b[$0] : 0)) }
    }
}

/// What an endpointer decided over a recording fed in chunks.
struct EndpointerRun {
    var decision: Endpointer.Decision
    /// Audio consumed when the decision became final.
    var finalAtMs: Int?
    /// Audio consumed when speech was first reported (to the chunk).
    var speechAtMs: Int?

    init(_ samples: [Int16], chunk: Int = 320, settings: Endpointer.Settings = .init(), rate: Int = 16_000) {
        var endpointer = Endpointer(settings: settings, sampleRate: rate)
        var decision = Endpointer.Decision.waiting
        var speechAtMs: Int?
        for start in stride(from: 0, to: samples.count, by: chunk) {
            decision = samples.withUnsafeBufferPointer { all in
                endpointer.feed(UnsafeBufferPointer(rebasing: all[start..<min(start + chunk, all.count)]))
            }
            if speechAtMs == nil, endpointer.heardSpeech { speechAtMs = endpointer.consumedMs }
            if decision.isFinal { break }
        }
        self.decision = decision
        self.speechAtMs = speechAtMs
        finalAtMs = decision.isFinal ? endpointer.consumedMs : nil
    }
}

@Suite("endpointing")
struct EndpointerTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var signal: @Sendable () -> [Int16]
        var settings = Endpointer.Settings()
        var decision: Endpointer.Decision
        var finalAtMs: Int

        init(_ name: String, _ signal: @escaping @Sendable () -> [Int16], settings: Endpointer.Settings = .init(),
             _ decision: Endpointer.Decision, at finalAtMs: Int) {
            testDescription = name
            self.signal = signal
            self.settings = settings
            self.decision = decision
            self.finalAtMs = finalAtMs
        }
    }

    static let rules: [Case] = [
        Case("digital silence is nothing heard", { Signal.silence(5_000) }, .nothingHeard, at: 2_500),
        Case("a steady 120 Hz hum is nothing heard", { Signal.tone(5_000, hz: 120, dBFS: -20) }, .nothingHeard, at: 2_500),
        Case("a steady 1 kHz whine is nothing heard", { Signal.tone(5_000, hz: 1_000, dBFS: -30) }, .nothingHeard, at: 2_500),
        Case("steady white noise is nothing heard", { Signal.noise(5_000, dBFS: -35) }, .nothingHeard, at: 2_500),
        Case("a full-scale click is not speech",
             { Signal.silence(500) + [32767, -32768, 32767, -32768] + Signal.silence(4_000) }, .nothingHeard, at: 2_500),
        Case("60 ms of tone is too short to be speech",
             { Signal.silence(500) + Signal.tone(60) + Signal.silence(4_000) }, .nothingHeard, at: 2_500),
        Case("80 ms of tone is speech, ended by silence",
             { Signal.silence(500) + Signal.tone(80) + Signal.silence(4_000) }, .ended(.silence), at: 500 + 80 + 800),
        Case("one burst ends silenceMs after it stops",
             { Signal.silence(500) + Signal.tone(1_000) + Signal.silence(3_000) }, .ended(.silence), at: 500 + 1_000 + 800),
        Case("pauses shorter than silenceMs do not end the utterance",
             { Signal.silence(500) + Signal.tone(400) + Signal.silence(780) + Signal.tone(400) + Signal.silence(600)
                 + Signal.tone(400) + Signal.silence(3_000) },
             .ended(.silence), at: 500 + 400 + 780 + 400 + 600 + 400 + 800),
        Case("a pause of exactly silenceMs ends the utterance",
             { Signal.silence(500) + Signal.tone(400) + Signal.silence(800) + Signal.tone(400) + Signal.silence(3_000) },
             .ended(.silence), at: 500 + 400 + 800),
        Case("speech over a steady hum is heard and ended",
             { Signal.mix(Signal.tone(6_000, hz: 120, dBFS: -35),
                          Signal.silence(1_000) + Signal.tone(600) + Signal.silence(200) + Signal.tone(600)) },
             .ended(.silence), at: 1_000 + 600 + 200 + 600 + 800),
        Case("speech over steady noise is heard and ended",
             { Signal.mix(Signal.noise(6_000, dBFS: -40), Signal.silence(1_000) + Signal.tone(1_000, dBFS: -25)) },
             .ended(.silence), at: 1_000 + 1_000 + 800),
        Case("speech that starts before the leading deadline and is confirmed after it counts",
             { Signal.silence(2_440) + Signal.tone(500) + Signal.silence(2_000) }, .ended(.silence), at: 2_440 + 500 + 800),
        Case("speech that starts at the leading deadline is too late",
             { Signal.silence(2_500) + Signal.tone(500) + Signal.silence(2_000) }, .nothingHeard, at: 2_500),
        Case("endless speech stops at maxUtteranceMs", { Signal.babble(20_000) }, .ended(.maxLength), at: 15_000),
        Case("a shorter maximum stops mid-word",
             { Signal.silence(300) + Signal.tone(5_000) }, settings: .init(maxUtteranceMs: 1_010), .ended(.maxLength), at: 1_020),
        Case("a maximum shorter than the leading silence gives nothing heard",
             { Signal.silence(5_000) }, settings: .init(maxUtteranceMs: 1_000), .nothingHeard, at: 1_000),
        Case("a shorter leading silence gives up sooner",
             { Signal.silence(5_000) }, settings: .init(leadingSilenceMs: 700), .nothingHeard, at: 700),
        Case("a shorter silence ends sooner",
             { Signal.silence(500) + Signal.tone(500) + Signal.silence(2_000) }, settings: .init(silenceMs: 300),
             .ended(.silence), at: 500 + 500 + 300),
    ]

    @Test("the rules hold on synthetic signals", arguments: rules)
    func rule(_ rule: Case) {
        let run = EndpointerRun(rule.signal(), settings: rule.settings)
        #expect(run.decision == rule.decision)
        #expect(run.finalAtMs == rule.finalAtMs)
    }

    @Test("chunks of any size give the same decision at the same time", arguments: [1, 77, 160, 320, 321, 1_280, 4_001, 1_000_000])
    func chunkSizes(chunk: Int) {
        let signal = Signal.silence(500) + Signal.tone(400) + Signal.silence(600) + Signal.tone(400) + Signal.silence(3_000)
        let run = EndpointerRun(signal, chunk: chunk)
        #expect(run.decision == .ended(.silence))
        #expect(run.finalAtMs == 500 + 400 + 600 + 400 + 800)
    }

    @Test("other sample rates keep the same times", arguments: [8_000, 22_050, 44_100, 48_000])
    func sampleRates(rate: Int) {
        let signal = Signal.silence(500, rate: rate) + Signal.tone(1_000, rate: rate) + Signal.silence(3_000, rate: rate)
        let run = EndpointerRun(signal, chunk: rate / 50, rate: rate)
        #expect(run.decision == .ended(.silence))
        #expect(run.finalAtMs == 2_300)
    }

    @Test("a noise that starts and stays becomes the floor and ends the utterance")
    func noiseThatStays() throws {
        let fan = Signal.noise(1_000, dBFS: -60) + Signal.noise(14_000, dBFS: -40, seed: 2)
        let run = EndpointerRun(fan)
        // Taken for speech at first, until the floor catches up at 2.5 dB/s.
        #expect(run.decision == .ended(.silence))
        #expect(try #require(run.finalAtMs) < 7_000)
    }

    @Test("it waits, then speaks, then ends, and stays ended")
    func decisionsInOrder() {
        var endpointer = Endpointer()
        #expect(endpointer.feed(Signal.silence(300)) == .waiting)
        #expect(!endpointer.heardSpeech)
        #expect(endpointer.feed(Signal.tone(300)) == .speaking)
        #expect(endpointer.heardSpeech)
        #expect(endpointer.feed(Signal.silence(500)) == .speaking)
        #expect(endpointer.feed(Signal.silence(500)) == .ended(.silence))
        let consumed = endpointer.consumedMs
        #expect(consumed == 300 + 300 + 800)
        #expect(endpointer.feed(Signal.tone(1_000)) == .ended(.silence))
        #expect(endpointer.consumedMs == consumed)
        #expect(endpointer.decision == .ended(.silence))
    }

    @Test("nothing heard stays nothing heard, even when speech follows")
    func nothingHeardSticks() {
        var endpointer = Endpointer()
        #expect(endpointer.feed(Signal.silence(3_000)) == .nothingHeard)
        #expect(endpointer.feed(Signal.tone(1_000)) == .nothingHeard)
        #expect(!endpointer.heardSpeech)
        #expect(endpointer.consumedMs == 2_500)
    }

    @Test("a part of a frame is carried, not judged")
    func partialFrame() {
        var endpointer = Endpointer()
        #expect(endpointer.feed(Signal.silence(30)) == .waiting)
        #expect(endpointer.consumedMs == 20)
        #expect(endpointer.feed([]) == .waiting)
        #expect(endpointer.feed(Signal.silence(10)) == .waiting)
        #expect(endpointer.consumedMs == 40)
    }

    @Test("the defaults are the ones INTERFACE.md documents")
    func defaults() {
        #expect(Endpointer.Settings() == Endpointer.Settings(silenceMs: 800, maxUtteranceMs: 15_000, leadingSilenceMs: 2_500))
    }

    @Test("absurd settings and rates do not trap")
    func absurdSettings() {
        var endpointer = Endpointer(settings: .init(silenceMs: .max, maxUtteranceMs: .min, leadingSilenceMs: -5), sampleRate: 0)
        #expect(endpointer.feed(Signal.tone(100)) == .nothingHeard)
    }
}

@Suite("endpointing real speech", .timeLimit(.minutes(1)), .offThePool)
struct EndpointerSpeechTests {
    struct Condition: Sendable, CustomTestStringConvertible {
        var text = "turn off the kitchen lights, and tell me what the weather will be like tomorrow"
        var leadingMs = 500
        var noise: Speech.Noise?
        var snrDB = 0.0
        var chunk = 320
        var testDescription: String {
            "\"\(text.prefix(20))\" after \(leadingMs) ms, " + (noise.map { "\($0) noise at \(Int(snrDB)) dB SNR" } ?? "clean")
                + ", chunks of \(chunk)"
        }
    }

    @Test("a spoken sentence is heard and ends within silenceMs + 300 ms of its end", arguments: [
        Condition(),
        Condition(noise: .white, snrDB: 15, chunk: 1_280),
        Condition(noise: .white, snrDB: 10),
        Condition(noise: .brown, snrDB: 15, chunk: 77),
        Condition(noise: .brown, snrDB: 10),
        Condition(text: "lights off", noise: .white, snrDB: 10, chunk: 1_280),
        Condition(text: "stop", leadingMs: 300, noise: .brown, snrDB: 10),
        // Already speaking when listening starts: the floor starts on speech and must come down.
        Condition(text: "what time is it", leadingMs: 0),
        Condition(text: "what time is it", leadingMs: 0, noise: .white, snrDB: 10),
    ])
    func sentence(_ condition: Condition) throws {
        let recording = try Speech.recording(condition.text, leadingMs: condition.leadingMs,
                                             noise: condition.noise, snrDB: condition.snrDB)
        let run = EndpointerRun(recording.samples, chunk: condition.chunk)
        #expect(run.decision == .ended(.silence))
        let speechAt = try #require(run.speechAtMs)
        let finalAt = try #require(run.finalAtMs)
        // Speech is reported once heard (to the chunk), not in the noise before it.
        #expect(speechAt > recording.speechStartMs)
        #expect(speechAt <= recording.speechStartMs + 500)
        #expect(finalAt > recording.speechEndMs)
        #expect(finalAt <= recording.speechEndMs + 800 + 300)
    }

    @Test("the noise alone is nothing heard", arguments: [Speech.Noise.white, .brown])
    func noiseAlone(_ noise: Speech.Noise) throws {
        let recording = try Speech.recording(Condition().text, noise: noise, snrDB: 10)
        let run = EndpointerRun(try #require(recording.noiseOnly))
        #expect(run.decision == .nothingHeard)
        #expect(run.finalAtMs == 2_500)
    }
}
