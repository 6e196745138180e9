// The delay between what the speaker played and its echo in the microphone,
// found by cross-correlation: the lag at which the microphone's audio looks
// most like the speaker's. Searched at a quarter of the rate (4 kHz, boxes of
// four samples) to keep it cheap on the audio thread, then refined at the full
// rate around the best coarse lag. Easy to get wrong: the correlation is
// normalised by both energies over the same stretch, or a loud passage of the
// reference wins whatever the lag; and a weak peak (no echo heard, or the room
// talking over it) is no estimate at all.

/// The lag, in samples, at which `near` best matches `far` delayed.
public enum EchoDelay {
    public struct Estimate: Sendable, Equatable {
        /// `near[i]` ≈ gain · `far[i − lag]`, in samples.
        public let lag: Int
        /// The normalised correlation at that lag, 0…1.
        public let correlation: Double
    }

    /// What `estimate` is given: a stretch of the microphone and the speaker around it.
    public struct Input: Sendable {
        public let near: [Int16]
        public let far: [Int16]
        public let farLead: Int
        public let lags: ClosedRange<Int>
    }

    public static func estimate(_ input: Input) -> Estimate? {
        estimate(near: input.near, far: input.far, farLead: input.farLead, lags: input.lags)
    }

    /// Below this the peak is not taken for an echo.
    public static let minimumCorrelation = 0.3

    /// The best lag in `lags` such that `near[i]` matches `far[i − lag]`, both indexed from the same
    /// start; nil when no lag correlates by `minimumCorrelation` or either signal is silent.
    /// `far` must extend `lags.upperBound` samples before `near`'s first sample: `far[j]` is the
    /// speaker's sample at `near`'s index `j − farLead`.
    public static func estimate(near: [Int16], far: [Int16], farLead: Int, lags: ClosedRange<Int>) -> Estimate? {
        let step = 4
        let coarseNear = decimate(near, by: step)
        let coarseFar = decimate(far, by: step)
        let coarseLead = farLead / step
        var best: (lag: Int, score: Double)?
        var lag = lags.lowerBound / step
        while lag * step <= lags.upperBound {
            if let score = correlation(coarseNear, coarseFar, offset: coarseLead - lag), score > (best?.score ?? 0) {
                best = (lag * step, score)
            }
            lag += 1
        }
        guard let coarse = best else { return nil }
        var fine = (lag: coarse.lag, score: 0.0)
        for candidate in max(lags.lowerBound, coarse.lag - step)...min(lags.upperBound, coarse.lag + step) {
            if let score = correlation(near, far, offset: farLead - candidate), score > fine.score {
                fine = (candidate, score)
            }
        }
        guard fine.score >= minimumCorrelation else { return nil }
        return Estimate(lag: fine.lag, correlation: fine.score)
    }

    /// The normalised correlation of `near[i]` with `far[i + offset]`; nil where `far` does not
    /// cover `near` or either is silent.
    static func correlation(_ near: [Int16], _ far: [Int16], offset: Int) -> Double? {
        guard offset >= 0, offset + near.count <= far.count, !near.isEmpty else { return nil }
        var cross = 0.0, nearEnergy = 0.0, farEnergy = 0.0
        near.withUnsafeBufferPointer { n in
            far.withUnsafeBufferPointer { f in
                for i in 0..<n.count {
                    let a = Double(n[i]), b = Double(f[i + offset])
                    cross += a * b
                    nearEnergy += a * a
                    farEnergy += b * b
                }
            }
        }
        guard nearEnergy > 0, farEnergy > 0 else { return nil }
        return cross / (nearEnergy * farEnergy).squareRoot()
    }

    /// Sums of `step` samples (a crude low-pass, enough to find a lag to within `step`).
    static func decimate(_ samples: [Int16], by step: Int) -> [Int16] {
        var out = [Int16](repeating: 0, count: samples.count / step)
        for i in 0..<out.count {
            var sum = 0
            for k in 0..<step { sum += Int(samples[i * step + k]) }
            out[i] = Int16(clamping: sum / step)
        }
        return out
    }
}
