// microWakeWord's features, made from the microphone's 16 kHz samples: a 30 ms Hann
// window every 10 ms, a 512-point fixed-point FFT, 40 mel channels from 125 to
// 7500 Hz, noise reduction, PCAN gain control and a log scale. This is TensorFlow
// Lite's "microfrontend" (tensorflow/lite/experimental/microfrontend/lib) with the
// settings pymicro-features gives it, the features every microWakeWord model is
// trained on.
//
// Hand-written because no Debian package has it (it lives inside TensorFlow and in
// pymicro-features' Python extension) and the project links only Debian's C
// libraries. It is integer arithmetic from end to end, so it is written to match the
// C bit for bit: each step in its own file, each naming the C file it follows, with
// C's 16/32/64-bit truncations kept as wrapping Swift operations. The few tables
// made with float maths (window, filterbank weights, gain) use the same
// single-precision glibc functions. Checked against pymicro-features 2.0.2 on
// speech, noise, silence, clipping and DC (MicroFrontendTests): every feature equal.
// Measured in a release build on this project's x86_64 machine: 0.9 ms of CPU per
// second of audio, as pymicro-features' C took through Python (1.0 ms); 0.75 ms on
// a later (AMD EPYC) machine (wakeword-bench).
import Glibc

/// The streaming front end: feed it samples in any chunks, get a 40-channel frame each 10 ms.
public struct MicroFrontend: Sendable {
    public static let sampleRate = 16_000
    public static let channelCount = 40
    public static let windowSamples = 480 // 30 ms
    public static let stepSamples = 160 // 10 ms
    /// What one unit of a feature is worth in the float features the models take
    /// (pymicro-features multiplies by this; models quantise from there).
    public static let featureUnit = 0.0390625

    private static let windowBits = 12 // kFrontendWindowBits
    private static let filterbankBits = 12 // kFilterbankBits

    private let coefficients: [Int16]
    private let fft = MicroFrontendFFT()
    private let filterbank: MicroFrontendFilterbank
    private var noiseReduction: MicroFrontendNoiseReduction
    private let gainControl: MicroFrontendGainControl
    /// MostSignificantBit32(fft size) - 1 - kFilterbankBits / 2: the filterbank's extra bits.
    private let correctionBits: Int
    private var input = [Int16](repeating: 0, count: windowSamples)
    private var inputUsed = 0

    public init() {
        // (float)M_PI, rounded to nearest: Float.pi is rounded towards zero, one bit lower, and
        // that bit changed a few window coefficients and so the spectrum.
        let arg = Float(Double.pi) * 2 / Float(Self.windowSamples)
        coefficients = (0..<Self.windowSamples).map { i in
            let value = 0.5 - 0.5 * cosf(arg * (Float(i) + 0.5))
            return Int16(floorf(value * Float(1 << Self.windowBits) + 0.5))
        }
        filterbank = MicroFrontendFilterbank(
            channelCount: Self.channelCount, sampleRate: Self.sampleRate, spectrumSize: MicroFrontendFFT.bins)
        noiseReduction = MicroFrontendNoiseReduction(channelCount: Self.channelCount)
        correctionBits = (MicroFrontendFFT.size.bitWidth - MicroFrontendFFT.size.leadingZeroBitCount) - 1 - Self.filterbankBits / 2
        gainControl = MicroFrontendGainControl(estimateBits: noiseReduction.estimateBits, correctionBits: correctionBits)
    }

    /// Samples kept from earlier calls towards the next frame: the next call's first frame ends
    /// `windowSamples - bufferedSamples` samples into it, and each further one `stepSamples` later.
    public var bufferedSamples: Int { inputUsed }

    /// The frames `samples` complete, oldest first; samples short of the next frame are kept.
    public mutating func process(_ samples: some Collection<Int16>) -> [[UInt16]] {
        var frames: [[UInt16]] = []
        var next = samples.startIndex
        while next != samples.endIndex {
            let take = min(Self.windowSamples - inputUsed, samples.distance(from: next, to: samples.endIndex))
            let end = samples.index(next, offsetBy: take)
            input.replaceSubrange(inputUsed..<inputUsed + take, with: samples[next..<end])
            inputUsed += take
            next = end
            if inputUsed == Self.windowSamples {
                frames.append(frame())
                input.replaceSubrange(0..<Self.windowSamples - Self.stepSamples, with: input[Self.stepSamples...])
                inputUsed -= Self.stepSamples
            }
        }
        return frames
    }

    /// FrontendProcessSamples on a full window.
    private mutating func frame() -> [UInt16] {
        var signal = withUnsafeTemporaryAllocation(of: Int16.self, capacity: Self.windowSamples) { windowed in
            var maxAbs: Int16 = 0
            input.withUnsafeBufferPointer { input in
                coefficients.withUnsafeBufferPointer { coefficients in
                    for i in 0..<Self.windowSamples {
                        let value = Int16(truncatingIfNeeded: (Int32(input[i]) * Int32(coefficients[i])) >> Int32(Self.windowBits))
                        windowed.initializeElement(at: i, to: value)
                        // As in the C, -32768 stays negative when negated and so never counts as the largest.
                        let magnitude = value < 0 ? 0 &- value : value
                        if magnitude > maxAbs { maxAbs = magnitude }
                    }
                }
            }
            let shift = 15 - (32 - UInt32(maxAbs).leadingZeroBitCount)
            return withUnsafeTemporaryAllocation(of: MicroFrontendFFT.Complex.self, capacity: MicroFrontendFFT.bins) { spectrum in
                fft.spectrum(UnsafeBufferPointer(windowed), shift: shift, into: spectrum)
                return filterbank.channels(UnsafeBufferPointer(spectrum), shift: shift)
            }
        }
        noiseReduction.apply(&signal)
        gainControl.apply(&signal, noiseEstimate: noiseReduction.estimate)
        return MicroFrontendLogScale.apply(signal, correctionBits: correctionBits)
    }
}
