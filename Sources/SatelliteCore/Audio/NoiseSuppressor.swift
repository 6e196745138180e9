// Steady noise taken out of the microphone's audio (`audio.noiseSuppression`),
// before the wake word, the endpointer and the server: a Wiener filter on a
// 16 ms spectrum every 8 ms, its a-priori SNR Ephraim and Malah's
// decision-directed estimate, its noise the minimum of the smoothed spectrum
// over the last 1.5 s (Martin's minimum statistics, simplified), its gain no
// lower than -18 dB, and the two bins under 94 Hz removed (a microphone's DC
// still leaks into the next at -23.5 dB, and is then steady noise, at the
// floor). The gain's floor, its overdrive and the decision-directed weight are
// those of WebRTC's suppressor at the level this project ran it (kHigh); its
// noise estimate is cheaper than WebRTC's three quantile trackers and
// speech-probability features. Like WebRTC's it needs its window of noise:
// for the first 1.5 s after the microphone opens it suppresses what it has
// heard so far, and after digital silence nothing, until it has heard more.
//
// Hand-written because WebRTC's suppressor (Debian 12's libwebrtc-audio-
// processing 0.3, through its AudioProcessing as this project ran it) took
// 0.087 to 0.098 s of CPU a minute of audio offline (wakeword-bench) and 0.106
// live, more than the satellite's whole CPU budget streaming (0.065 s a
// minute, a third of wyoming-satellite's); speexdsp's preprocessor, the only
// other one Debian 12 has, took 0.062 to 0.070 in a C loop, about all of it
// (BENCHMARKS.md, "The local wake word"). This one takes 0.023
// to 0.030 in the wakeword-bench runs where WebRTC's took 0.087 to 0.098, and does
// for the wake word what WebRTC's did: on the bench's corpus in noise, 279 of
// 315 heard against WebRTC's 281 and 267 with none; steady white, pink and
// brown noise 19, 22 and 30 dB down (WebRTC's 18, 20, 27). Measured and not
// taken: a 32 ms spectrum every 16 ms (half the frames) smeared the word's
// onsets and heard 258 to 263 of the corpus, fewer than none.
//
// Streaming: samples in, as many out, 16 ms later. The audio thread's alone.
import Glibc

public final class NoiseSuppressor {
    /// The spectrum's length and its step (16 ms and 8 ms at 16 kHz).
    public static let frameSize = 256
    public static let hop = frameSize / 2
    /// What comes out lags what went in by this many samples, for any chunking.
    public static let latency = 2 * hop

    /// The floor of the gain, and how much the noise is overestimated in the gain (WebRTC's kHigh).
    static let floor: Float = 0.125
    static let overdrive: Float = 1.1
    /// The decision-directed estimate's weight on the last frame's clean speech (WebRTC's).
    static let decisionDirected: Float = 0.98
    /// The lowest a-priori SNR (-25 dB).
    static let snrFloor: Float = 0.003
    /// The spectrum's smoothing before its minimum is tracked.
    static let smoothing: Float = 0.8
    /// The minimum is over `subwindows` of `subwindowFrames` frames: 8 × 24 × 8 ms, 1.5 s.
    static let subwindows = 8
    static let subwindowFrames = 24
    /// The smoothed spectrum's minimum under its mean, for steady noise. Not derived: about Martin's
    /// bias compensation for this smoothing and window; steady noise then settles at the floor
    /// (NoiseSuppressorTests).
    static let bias: Float = 2.2
    /// Bins below this are removed (2 × 62.5 Hz: under 94 Hz): a microphone's DC and hum, no speech.
    static let lowestBin = 2

    private let fft = RealFFT(size: NoiseSuppressor.frameSize)
    /// The spectrum's bins (DC to Nyquist), rounded up to whole SIMD4s: the bins past Nyquist are
    /// zero and stay so, so that every bin is worked four at a time.
    private let bins = (NoiseSuppressor.frameSize / 2 + 1 + 3) / 4 * 4
    /// The last `frameSize` samples heard, `fresh` of them not yet in a frame.
    private let input: UnsafeMutablePointer<Float>
    private var fresh = 0
    private let window: UnsafeMutablePointer<Float>
    private let windowed: UnsafeMutablePointer<Float>
    private let re: UnsafeMutablePointer<Float>
    private let im: UnsafeMutablePointer<Float>
    /// The frames' overlap being added up; its first `hop` samples are done after each frame.
    private let overlap: UnsafeMutablePointer<Float>
    private let synthesised: UnsafeMutablePointer<Float>
    /// Per bin: the smoothed power, its minimum in this subwindow and in the ones before, and the
    /// last frame's clean speech power.
    private let smoothed: UnsafeMutablePointer<Float>
    private let minimum: UnsafeMutablePointer<Float>
    private let pastMinimum: UnsafeMutablePointer<Float>
    private let subwindowMinima: UnsafeMutablePointer<Float>
    private let speech: UnsafeMutablePointer<Float>
    private var frames = 0
    /// Finished samples waiting to go out, from `readyStart`: first a hop of silence, then the first
    /// frame's first half (the hop before the first sample).
    private var ready: [Int16]
    private var readyStart = 0

    public init() {
        let size = Self.frameSize
        input = .allocate(capacity: size)
        window = .allocate(capacity: size)
        windowed = .allocate(capacity: size)
        overlap = .allocate(capacity: size)
        synthesised = .allocate(capacity: size)
        re = .allocate(capacity: bins)
        im = .allocate(capacity: bins)
        re.initialize(repeating: 0, count: bins)
        im.initialize(repeating: 0, count: bins)
        smoothed = .allocate(capacity: bins)
        minimum = .allocate(capacity: bins)
        pastMinimum = .allocate(capacity: bins)
        subwindowMinima = .allocate(capacity: bins * Self.subwindows)
        speech = .allocate(capacity: bins)
        // A square-root periodic Hann before and after: their product overlapped by half adds up to one.
        for n in 0..<size {
            let hann = 0.5 - 0.5 * cos(2 * Double.pi * Double(n) / Double(size))
            window[n] = Float(hann.squareRoot())
        }
        input.initialize(repeating: 0, count: size)
        overlap.initialize(repeating: 0, count: size)
        smoothed.initialize(repeating: 0, count: bins)
        minimum.initialize(repeating: .infinity, count: bins)
        pastMinimum.initialize(repeating: .infinity, count: bins)
        subwindowMinima.initialize(repeating: .infinity, count: bins * Self.subwindows)
        speech.initialize(repeating: 0, count: bins)
        // A hop of silence, and the first frame's first half (from before the first sample): `latency`.
        ready = [Int16](repeating: 0, count: Self.latency - Self.hop)
        ready.reserveCapacity(Self.latency + 2 * size)
    }

    deinit {
        for pointer in [input, window, windowed, overlap, synthesised, re, im, smoothed, minimum, pastMinimum, subwindowMinima, speech] {
            pointer.deallocate()
        }
    }

    /// `samples` suppressed in place: each replaced by what came out `latency` samples before it.
    public func process(_ samples: UnsafeMutableBufferPointer<Int16>) {
        let start = Self.frameSize - Self.hop
        for sample in samples {
            input[start + fresh] = Float(sample)
            fresh += 1
            if fresh == Self.hop {
                frame()
                input.update(from: input + Self.hop, count: start)
                fresh = 0
            }
        }
        for index in samples.indices { samples[index] = ready[readyStart + index] }
        readyStart += samples.count
        if readyStart >= Self.frameSize {
            ready.removeFirst(readyStart)
            readyStart = 0
        }
    }

    public func process(_ samples: inout [Int16]) {
        samples.withUnsafeMutableBufferPointer { process($0) }
    }

    /// One frame: the last `frameSize` samples, suppressed, added to the overlap; its first `hop` done.
    private func frame() {
        let size = Self.frameSize
        for n in 0..<size { windowed[n] = input[n] * window[n] }
        fft.forward(windowed, re: re, im: im)
        let first = frames == 0
        for k in Swift.stride(from: 0, to: bins, by: 4) {
            let r = (re + k).four, i = (im + k).four
            let power = r * r + i * i
            let smooth = first ? power : Self.smoothing * (smoothed + k).four + (1 - Self.smoothing) * power
            (smoothed + k).four = smooth
            let low = Self.smaller((minimum + k).four, smooth)
            (minimum + k).four = low
            let noise = Self.larger(Self.bias * Self.smaller(low, (pastMinimum + k).four), SIMD4(repeating: 1e-3))
            let posterior = power / noise
            let now = (1 - Self.decisionDirected) * Self.larger(posterior - 1, .zero)
            let prior = Self.larger(Self.decisionDirected * (speech + k).four / noise + now, SIMD4(repeating: Self.snrFloor))
            let gain = Self.larger(prior / (Self.overdrive + prior), SIMD4(repeating: Self.floor))
            (speech + k).four = gain * gain * power
            (re + k).four = r * gain
            (im + k).four = i * gain
        }
        for k in 0..<Self.lowestBin { (re[k], im[k], speech[k]) = (0, 0, 0) }
        frames += 1
        if frames % Self.subwindowFrames == 0 { closeSubwindow() }
        fft.inverse(re: re, im: im, into: synthesised)
        let scale = 1 / Float(size)
        for n in 0..<size { overlap[n] += synthesised[n] * window[n] * scale }
        for n in 0..<Self.hop {
            // Rounded half away from zero without libm's roundf, which was a tenth of the suppressor's time.
            let value = max(-32768, min(32767, overlap[n]))
            ready.append(Int16(value + (value < 0 ? -0.5 : 0.5)))
        }
        overlap.update(from: overlap + Self.hop, count: size - Self.hop)
        (overlap + size - Self.hop).update(repeating: 0, count: Self.hop)
    }

    /// A subwindow's minimum kept in place of the oldest, and the minimum over all of them.
    private func closeSubwindow() {
        let slot = (frames / Self.subwindowFrames - 1) % Self.subwindows
        (subwindowMinima + slot * bins).update(from: minimum, count: bins)
        minimum.update(repeating: .infinity, count: bins)
        for k in 0..<bins {
            var past = Float.infinity
            for window in 0..<Self.subwindows { past = min(past, subwindowMinima[window * bins + k]) }
            pastMinimum[k] = past
        }
    }

    // Not the standard library's pointwiseMin and pointwiseMax: they were left as calls, a fifth of
    // the suppressor's instructions.
    @inline(__always) private static func smaller(_ a: SIMD4<Float>, _ b: SIMD4<Float>) -> SIMD4<Float> {
        a.replacing(with: b, where: b .< a)
    }

    @inline(__always) private static func larger(_ a: SIMD4<Float>, _ b: SIMD4<Float>) -> SIMD4<Float> {
        a.replacing(with: b, where: b .> a)
    }
}
