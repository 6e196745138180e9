// The delay between what the speaker played and its echo in the microphone,
// found by cross-correlation: the lag at which the microphone's audio looks
// most like the speaker's. Searched at a quarter of the rate (4 kHz, boxes of
// four samples) to keep it cheap, then refined at the full rate around the
// best coarse lag. The coarse search is the cost: 4,001 lags (−0.2 to 0.8 s)
// of 4,000 products each; the figures below are for the 2,800 lags of a
// search to 0.5 s, and the cost grows with the lags. Done plainly in Double (each lag's energies summed
// again, one product at a time) it took 52 ms a measurement on this machine
// (Intel Xeon, `swiftc -O`), 1.2 s of CPU a minute in the live echo room;
// in Float eight products at a time, with the near side's energy summed once
// and the far side's from running sums, it takes about 2 ms. The refinement
// stays in Double. Easy to get wrong: the correlation is
// normalised by both energies over the same stretch, or a loud passage of the
// reference wins whatever the lag; and a weak peak (no echo heard, or the room
// talking over it) is no estimate at all. The peak is the correlation's
// magnitude: a speaker or a microphone wired the other way round gives the echo
// inverted, a negative peak, and the highest positive one is then a sidelobe.

/// The lag, in samples, at which `near` best matches `far` delayed.
public enum EchoDelay {
    public struct Estimate: Sendable, Equatable {
        /// `near[i]` ≈ gain · `far[i − lag]`, in samples.
        public let lag: Int
        /// The normalised correlation at that lag, −1…1 (negative: the echo is inverted).
        public let correlation: Double
        /// Samples of `near` that the speaker's sound reaches at that lag: how much echo the peak was found over.
        public var echoHeard = Int.max
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

    /// The best lag in `lags` such that `near[i]` matches `far[i − lag]` or its inverse, both indexed
    /// from the same start; nil when no lag correlates by `minimumCorrelation` either way or either
    /// signal is silent.
    /// `far` must extend `lags.upperBound` samples before `near`'s first sample: `far[j]` is the
    /// speaker's sample at `near`'s index `j − farLead`.
    public static func estimate(near: [Int16], far: [Int16], farLead: Int, lags: ClosedRange<Int>) -> Estimate? {
        let step = 4
        let coarseNear = decimate(near, by: step)
        let coarseFar = decimate(far, by: step)
        let coarseLead = farLead / step
        guard let coarse = bestCoarseLag(near: coarseNear.map(Float.init), far: coarseFar.map(Float.init), farLead: coarseLead,
                                         lags: (lags.lowerBound / step)...(lags.upperBound / step)) else { return nil }
        let coarseLag = coarse * step
        var fine = (lag: coarseLag, score: 0.0)
        for candidate in max(lags.lowerBound, coarseLag - step)...min(lags.upperBound, coarseLag + step) {
            if let score = correlation(near, far, offset: farLead - candidate), abs(score) > abs(fine.score) {
                fine = (candidate, score)
            }
        }
        guard abs(fine.score) >= minimumCorrelation else { return nil }
        let offset = farLead - fine.lag
        let echoHeard = near.indices.count { i in far.indices.contains(i + offset) && far[i + offset] != 0 }
        return Estimate(lag: fine.lag, correlation: fine.score, echoHeard: echoHeard)
    }

    /// The lag in `lags` whose normalised correlation of `near[i]` with `far[i + farLead − lag]` is the
    /// highest in magnitude; nil when none is above 0 (silence, or no lag where `far` covers `near`).
    static func bestCoarseLag(near: [Float], far: [Float], farLead: Int, lags: ClosedRange<Int>) -> Int? {
        let nearEnergy = near.reduce(0.0) { $0 + Double($1) * Double($1) }
        guard nearEnergy > 0 else { return nil }
        // farEnergy[j] = the sum of far[0..<j] squared: any stretch's energy in one subtraction.
        var farEnergy = [Double](repeating: 0, count: far.count + 1)
        for j in far.indices { farEnergy[j + 1] = farEnergy[j] + Double(far[j]) * Double(far[j]) }
        var best: (lag: Int, score: Double)?
        near.withUnsafeBufferPointer { n in
            far.withUnsafeBufferPointer { f in
                for lag in lags {
                    let offset = farLead - lag
                    guard offset >= 0, offset + n.count <= f.count else { continue }
                    let energy = farEnergy[offset + n.count] - farEnergy[offset]
                    guard energy > 0 else { continue }
                    let score = abs(Double(dot(n, f, offset: offset))) / (nearEnergy * energy).squareRoot()
                    if score > (best?.score ?? 0) { best = (lag, score) }
                }
            }
        }
        return best?.lag
    }

    /// The sum of `a[i] · b[offset + i]`, eight at a time.
    static func dot(_ a: UnsafeBufferPointer<Float>, _ b: UnsafeBufferPointer<Float>, offset: Int) -> Float {
        precondition(offset >= 0 && offset + a.count <= b.count, "b must cover a from offset")
        guard let aBase = a.baseAddress, let bBase = b.baseAddress else { return 0 }
        let left = UnsafeRawPointer(aBase), right = UnsafeRawPointer(bBase + offset)
        var lanes = SIMD8<Float>()
        var i = 0
        while i + 8 <= a.count {
            lanes += left.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
                * right.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
            i += 8
        }
        var sum = lanes.sum()
        while i < a.count {
            sum += a[i] * b[offset + i]
            i += 1
        }
        return sum
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
