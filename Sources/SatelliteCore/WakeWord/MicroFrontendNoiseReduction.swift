// The front end's noise reduction: a slow per-channel estimate of the steady noise,
// subtracted from each frame (never below 5% of the signal), as TensorFlow Lite's
// microfrontend (lib/noise_reduction.cc) does it with 14-bit smoothing factors.
// The estimate is also what the gain control (MicroFrontendGainControl) divides by.
struct MicroFrontendNoiseReduction: Sendable {
    private static let bits = 14 // kNoiseReductionBits
    private let smoothingBits: UInt32 = 10
    // The float settings pymicro-features gives, times 2^14 and truncated as the C conversion does.
    private let evenSmoothing = UInt64(Float(0.025) * 16384)
    private let oddSmoothing = UInt64(Float(0.06) * 16384)
    private let minSignalRemaining = UInt64(Float(0.05) * 16384)
    private(set) var estimate: [UInt32]

    /// The estimate's bits below the signal's: what the gain control must shift it by.
    var estimateBits: Int { Int(smoothingBits) }

    init(channelCount: Int) {
        estimate = [UInt32](repeating: 0, count: channelCount)
    }

    mutating func apply(_ signal: inout [UInt32]) {
        for i in signal.indices {
            let smoothing = i & 1 == 0 ? evenSmoothing : oddSmoothing
            let scaledUp = signal[i] << smoothingBits
            var updated = UInt32(truncatingIfNeeded:
                (UInt64(scaledUp) &* smoothing &+ UInt64(estimate[i]) &* ((1 << Self.bits) - smoothing)) >> UInt64(Self.bits))
            estimate[i] = updated
            updated = min(updated, scaledUp)
            let floor = UInt32(truncatingIfNeeded: (UInt64(signal[i]) * minSignalRemaining) >> UInt64(Self.bits))
            let subtracted = (scaledUp - updated) >> smoothingBits
            signal[i] = max(subtracted, floor)
        }
    }
}
