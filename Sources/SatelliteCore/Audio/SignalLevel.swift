// How loud a stretch of microphone audio is, and whether it is sound at all:
// `parlourctl doctor` and the level meter of `parlourctl setup` both judge a
// microphone by it. Easy to get wrong: a microphone that is switched off in the
// mixer gives exact zeros, and a broken one may give one value over and over,
// which is loud by RMS yet carries nothing; both must be told from a quiet room.
import Glibc

/// Running statistics of 16-bit samples: RMS, peak, a constant value, clipping.
public struct SignalLevel: Sendable, Equatable {
    /// Samples seen.
    public private(set) var count = 0
    private var sumOfSquares = 0.0
    /// The largest magnitude seen (0 to 32768).
    public private(set) var peak = 0
    private var first: Int16?
    /// True while every sample seen had the same value.
    public private(set) var constant = true
    /// Samples at full scale (32767 or -32768).
    public private(set) var clipped = 0

    /// The floor of the decibel figures: the quietest level 16-bit samples can tell apart from zero.
    public static let floorDBFS = MeterText.floorDBFS
    /// Below this RMS a microphone barely hears anything; a quiet room with a working microphone is louder.
    public static let quietDBFS = -70.0
    /// More than this share of samples at full scale is clipping.
    public static let clippingShare = 0.01

    public init() {}

    public mutating func add<C: Collection<Int16>>(_ samples: C) {
        for sample in samples {
            let value = Int(sample)
            sumOfSquares += Double(value * value)
            peak = max(peak, abs(value))
            if sample == .max || sample == .min { clipped += 1 }
            if let first {
                if sample != first { constant = false }
            } else {
                first = sample
            }
        }
        count += samples.count
    }

    /// The RMS in dBFS (a full-scale sine is about -3), no lower than `floorDBFS`.
    public var rmsDBFS: Double {
        guard count > 0 else { return Self.floorDBFS }
        return Self.decibels((sumOfSquares / Double(count)).squareRoot())
    }

    /// The peak in dBFS, no lower than `floorDBFS`.
    public var peakDBFS: Double { Self.decibels(Double(peak)) }

    /// The value every sample had, when they all had one.
    public var constantValue: Int16? { constant ? first : nil }

    private static func decibels(_ magnitude: Double) -> Double {
        guard magnitude > 0 else { return floorDBFS }
        return max(floorDBFS, 20 * log10(magnitude / 32768))
    }

    /// What the samples say about the microphone.
    public enum Verdict: String, Sendable, Equatable {
        /// Sound that varies, neither too quiet nor clipped.
        case ok
        /// No samples at all.
        case none
        /// Exact zeros: the capture is switched off, muted in the mixer, or not connected.
        case silent
        /// One value over and over that is not zero: the device delivers no sound.
        case constant
        /// Sound, but barely any.
        case quiet
        /// Too much of it at full scale.
        case clipping
    }

    public var verdict: Verdict {
        if count == 0 { return .none }
        if peak == 0 { return .silent }
        if constant && count > 1 { return .constant }
        if rmsDBFS < Self.quietDBFS { return .quiet }
        if Double(clipped) > Self.clippingShare * Double(count) { return .clipping }
        return .ok
    }

    /// A decibel figure rounded to a tenth, as it is shown and sent.
    public static func rounded(_ dbfs: Double) -> Double { (dbfs * 10).rounded() / 10 }
}
