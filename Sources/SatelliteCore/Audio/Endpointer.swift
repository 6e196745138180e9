// The satellite's own end-of-utterance detection, for the record transport and push
// mode: when did someone start speaking, and when did they stop. Easy to get wrong:
// a fixed threshold (a quiet room and a humming fridge need different ones), a click
// taken for speech, a pause between words taken for the end, chunks that are not frames.
//
// How it hears speech. Samples pass a first-order high-pass filter at 100 Hz (DC
// offset, rumble, mains hum) and are judged in 20 ms frames by their energy in dBFS
// against a noise floor. The floor starts at the first frame's level, falls halfway
// to any quieter frame at once, and rises by at most 0.05 dB a frame (2.5 dB/s): a
// steady sound becomes the floor, while speech, which keeps dipping between
// syllables, does not. A frame is voiced when it is 10 dB above the floor and above
// -60 dBFS, so near-digital silence is never speech. Speech starts after 4 voiced
// frames in a row (80 ms), so a click is not speech; it ends after `silenceMs`
// without a voiced frame, so shorter pauses between words do not end it.
// Known limits: a loud sound that starts and stays (a fan switched on mid-listen)
// is taken for speech for about 4 s until the floor catches up; speech quieter than
// about 7 dB over white noise is not heard (the tests use 10 and 15 dB).

import Glibc

/// Decides, from microphone samples as they arrive, whether someone spoke and when they finished.
///
/// Rules, in audio time (whole 20 ms frames):
/// - No speech started within `leadingSilenceMs`: `.nothingHeard`.
/// - After speech, `silenceMs` without a voiced frame: `.ended(.silence)`.
/// - `maxUtteranceMs` of audio in total: `.ended(.maxLength)`, even mid-word
///   (`.nothingHeard` if no speech had started).
/// - Speech cannot start within the first `ignoreOnsetMs`: the satellite's own awake
///   sound is in the microphone then. Speech that began over it starts once it is past.
///
/// Once it returns `.ended` or `.nothingHeard` it returns the same for every later
/// call, and consumes no more samples.
public struct Endpointer: Sendable {
    public struct Settings: Sendable, Equatable {
        /// Quiet after speech that ends the utterance.
        public var silenceMs: Int
        /// The longest utterance, counted from the first sample.
        public var maxUtteranceMs: Int
        /// How long to wait for speech to start.
        public var leadingSilenceMs: Int
        /// How long, from the first sample, voiced frames do not count towards the start of speech.
        public var ignoreOnsetMs: Int

        public init(silenceMs: Int = 800, maxUtteranceMs: Int = 15_000, leadingSilenceMs: Int = 2_500, ignoreOnsetMs: Int = 0) {
            self.silenceMs = silenceMs
            self.maxUtteranceMs = maxUtteranceMs
            self.leadingSilenceMs = leadingSilenceMs
            self.ignoreOnsetMs = ignoreOnsetMs
        }
    }

    public enum EndReason: Sendable, Equatable {
        case silence, maxLength
    }

    public enum Decision: Sendable, Equatable {
        /// No speech yet; keep listening.
        case waiting
        /// Speech has started and the utterance has not ended (it may be between words).
        case speaking
        /// The utterance is over.
        case ended(EndReason)
        /// Nobody spoke.
        case nothingHeard

        /// Whether the decision will not change any more: stop feeding.
        public var isFinal: Bool {
            switch self {
            case .waiting, .speaking: return false
            case .ended, .nothingHeard: return true
            }
        }
    }

    static let frameMs = 20
    static let highPassHz = 100.0
    static let marginDB = 10.0
    static let minimumLevelDB = -60.0
    static let lowestFloorDB = -100.0
    static let onsetFrames = 4
    static let floorRisePerFrameDB = 0.05
    static let floorFallFraction = 0.5

    public let settings: Settings
    public let sampleRate: Int
    /// The decision after the last whole frame.
    public private(set) var decision: Decision = .waiting
    /// Whether speech has started.
    public var heardSpeech: Bool { speechStarted }
    /// Audio judged so far, in whole frames; it stops growing once the decision is final.
    public var consumedMs: Int { Int(Int64(consumedSamples) * 1000 / Int64(sampleRate)) }

    private let frameLength: Int
    private let silenceSamples: Int
    private let maxSamples: Int
    private let leadingSamples: Int
    private let ignoredSamples: Int
    private let highPassPole: Float

    private var speechStarted = false
    private var consumedSamples = 0
    private var voicedRun = 0
    private var quietSamples = 0
    private var floorDB: Double?
    // The frame being filled, carried across chunks.
    private var frameFill = 0
    private var frameEnergy: Double = 0
    // The high-pass filter's memory.
    private var lastInput: Float = 0
    private var lastOutput: Float = 0

    /// - Parameter sampleRate: of the mono samples that will be fed.
    public init(settings: Settings = Settings(), sampleRate: Int = 16_000) {
        // A rate or setting that makes no sense must not trap or spin: the rate is at
        // least 1 kHz, and times are clamped to a day so they cannot overflow.
        let rate = max(sampleRate, 1_000)
        func samples(_ ms: Int) -> Int { min(max(ms, 0), 86_400_000) * rate / 1000 }
        self.settings = settings
        self.sampleRate = rate
        frameLength = rate * Self.frameMs / 1000
        silenceSamples = max(samples(settings.silenceMs), 1)
        maxSamples = samples(settings.maxUtteranceMs)
        leadingSamples = samples(settings.leadingSilenceMs)
        ignoredSamples = samples(settings.ignoreOnsetMs)
        highPassPole = Float(1 - 2 * Double.pi * Self.highPassHz / Double(rate))
    }

    /// Judges the next mono samples, of any count, and says where the utterance stands.
    public mutating func feed(_ samples: UnsafeBufferPointer<Int16>) -> Decision {
        var index = 0
        while index < samples.count, !decision.isFinal {
            let take = min(frameLength - frameFill, samples.count - index)
            var energy: Float = 0
            for sample in samples[index..<index + take] {
                let input = Float(sample)
                let output = input - lastInput + highPassPole * lastOutput
                lastInput = input
                lastOutput = output
                energy += output * output
            }
            frameEnergy += Double(energy)
            frameFill += take
            index += take
            if frameFill == frameLength {
                judgeFrame(meanSquare: frameEnergy / Double(frameLength))
                frameFill = 0
                frameEnergy = 0
            }
        }
        return decision
    }

    public mutating func feed(_ samples: [Int16]) -> Decision {
        samples.withUnsafeBufferPointer { feed($0) }
    }

    private mutating func judgeFrame(meanSquare: Double) {
        let fullScale = 32768.0 * 32768.0
        let level = max(10 * log10(max(meanSquare, 1e-12) / fullScale), Self.lowestFloorDB)
        let floor = floorDB ?? level
        let voiced = level >= max(floor + Self.marginDB, Self.minimumLevelDB)
        if level < floor {
            floorDB = floor + (level - floor) * Self.floorFallFraction
        } else {
            floorDB = floor + min(level - floor, Self.floorRisePerFrameDB)
        }

        consumedSamples += frameLength
        if voiced, consumedSamples <= ignoredSamples, !speechStarted {
            // The awake sound: neither speech nor the quiet after it.
            voicedRun = 0
        } else if voiced {
            voicedRun += 1
            quietSamples = 0
            if voicedRun >= Self.onsetFrames { speechStarted = true }
        } else {
            voicedRun = 0
            quietSamples += frameLength
        }

        if speechStarted {
            if quietSamples >= silenceSamples {
                decision = .ended(.silence)
            } else if consumedSamples >= maxSamples {
                decision = .ended(.maxLength)
            } else {
                decision = .speaking
            }
        } else if consumedSamples >= maxSamples {
            decision = .nothingHeard
        } else if consumedSamples >= leadingSamples, voicedRun == 0 {
            // A run of voiced frames that began in time may still become speech.
            decision = .nothingHeard
        } else {
            decision = .waiting
        }
    }
}
