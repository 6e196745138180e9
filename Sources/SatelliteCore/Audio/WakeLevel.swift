// How loudly a satellite heard its wake word, for the claim its siblings
// compare: the RMS of the processed microphone audio over about the last
// second (the word itself and a little before), kept as each period comes so
// that a wake reads it at once. Periods are whole: the span covers the newest
// periods that make at least `spanSamples`.
import Glibc

/// The level of the last second or so of the microphone's processed audio.
public struct WakeLevel: Sendable, Equatable {
    /// About one second at 16 kHz: an "okay nabu" and the start of the room's noise around it.
    public static let spanSamples = 16_000

    public let spanSamples: Int
    /// Each period's sum of squares and length, oldest first.
    private var periods: [Period] = []
    /// Sums of squares are whole numbers, kept whole so that taking the oldest away leaves no error.
    private var sum = 0
    private var count = 0

    private struct Period: Sendable, Equatable {
        let sum: Int
        let count: Int
    }

    public init(spanSamples: Int = WakeLevel.spanSamples) {
        self.spanSamples = max(1, spanSamples)
    }

    /// Takes a period heard; the oldest go once the newer ones cover the span without them.
    public mutating func add<C: Collection<Int16>>(_ samples: C) {
        guard !samples.isEmpty else { return }
        var squares = 0
        for sample in samples {
            let value = Int(sample)
            squares += value * value
        }
        periods.append(Period(sum: squares, count: samples.count))
        sum += squares
        count += samples.count
        while let oldest = periods.first, count - oldest.count >= spanSamples {
            periods.removeFirst()
            sum -= oldest.sum
            count -= oldest.count
        }
    }

    /// The RMS over the span in dBFS (a full-scale sine is about -3), no lower than `SignalLevel.floorDBFS`.
    public var dBFS: Double {
        guard count > 0, sum > 0 else { return SignalLevel.floorDBFS }
        let rms = (Double(sum) / Double(count)).squareRoot()
        return max(SignalLevel.floorDBFS, 20 * log10(rms / 32768))
    }

    /// Forgets what was heard (the microphone opened afresh).
    public mutating func reset() {
        periods.removeAll(keepingCapacity: true)
        sum = 0
        count = 0
    }
}
