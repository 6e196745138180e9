// The front end's 512-point real FFT in 16-bit fixed point: KISS FFT built with
// FIXED_POINT=16 (kiss_fftr over a 256-point complex kiss_fft, radix 4 only), as
// TensorFlow Lite's microfrontend (lib/fft.cc, kiss_fft_int16.cc) compiles it.
// Hand-written for the reason MicroFrontend.swift gives; every store truncates to
// 16 bits and every product rounds as KISS FFT's sround does, so the spectrum is
// the same bit for bit, and with it the features.
import Glibc

struct MicroFrontendFFT: Sendable {
    struct Complex: Sendable {
        var r: Int16
        var i: Int16
    }

    /// The real input's length.
    static let size = 512
    private static let complexSize = size / 2
    /// The spectrum's bins, DC to Nyquist.
    static let bins = complexSize + 1

    private let twiddles: [Complex]
    private let superTwiddles: [Complex]

    init() {
        let n = Self.complexSize
        twiddles = (0..<n).map { k in Self.exp(-2 * Double.pi * Double(k) / Double(n)) }
        superTwiddles = (0..<n / 2).map { k in Self.exp(-Double.pi * (Double(k + 1) / Double(n) + 0.5)) }
    }

    /// KISS FFT's kf_cexp in fixed point: floor(.5 + 32767 * cos), likewise sin.
    private static func exp(_ phase: Double) -> Complex {
        Complex(r: Int16(floor(0.5 + 32767 * cos(phase))), i: Int16(floor(0.5 + 32767 * sin(phase))))
    }

    /// The spectrum of `input` (at most `size` samples, zero-padded) shifted left by `shift` bits,
    /// as FftCompute gives it, into `spectrum` (`bins` long).
    // Through buffer pointers: the butterflies are most of the front end's time, and an array's
    // checks on each element made them about three times slower (callgrind, release build, the
    // wakeword-bench driver). The scratch is a temporary buffer (on the stack up to 1 KiB, one
    // allocation above) and the spectrum the caller's, where each was a new array every frame.
    func spectrum(_ input: UnsafeBufferPointer<Int16>, shift: Int, into spectrum: UnsafeMutableBufferPointer<Complex>) {
        precondition(input.count <= Self.size && spectrum.count == Self.bins)
        withUnsafeTemporaryAllocation(of: Complex.self, capacity: 2 * Self.complexSize) { buffer in
            // The real samples packed in pairs, as kiss_fftr reads them, then the complex transform.
            let packed = UnsafeMutableBufferPointer(rebasing: buffer[0..<Self.complexSize])
            let half = UnsafeMutableBufferPointer(rebasing: buffer[Self.complexSize...])
            packed.initialize(repeating: Complex(r: 0, i: 0))
            for k in input.indices {
                let value = Int16(truncatingIfNeeded: Int(UInt16(bitPattern: input[k])) << shift)
                if k & 1 == 0 { packed[k >> 1].r = value } else { packed[k >> 1].i = value }
            }
            twiddles.withUnsafeBufferPointer { twiddles in
                Self.work(half, 0, UnsafeBufferPointer(packed), 0, stride: 1, m: Self.complexSize / 4, twiddles)
            }
            realSpectrum(UnsafeBufferPointer(half), into: spectrum)
        }
    }

    /// kf_work for 256 = 4 · 4 · 4 · 4 (kf_factor's answer, radix 4 only): four decimated transforms
    /// of length `m` each, then one radix-4 stage to join them.
    private static func work(_ out: UnsafeMutableBufferPointer<Complex>, _ outStart: Int, _ input: UnsafeBufferPointer<Complex>,
                             _ inStart: Int, stride: Int, m: Int, _ twiddles: UnsafeBufferPointer<Complex>) {
        if m == 1 {
            for j in 0..<4 { out[outStart + j] = input[inStart + j * stride] }
        } else {
            for j in 0..<4 {
                work(out, outStart + j * m, input, inStart + j * stride, stride: stride * 4, m: m / 4, twiddles)
            }
        }
        butterfly4(out, outStart, stride: stride, m: m, twiddles)
    }

    private static func butterfly4(_ f: UnsafeMutableBufferPointer<Complex>, _ start: Int, stride: Int, m: Int,
                                   _ twiddles: UnsafeBufferPointer<Complex>) {
        for k in 0..<m {
            let a = start + k, b = a + m, c = a + 2 * m, d = a + 3 * m
            var fa = divide(f[a], 4)
            let fb = divide(f[b], 4), fc = divide(f[c], 4), fd = divide(f[d], 4)
            let s0 = multiply(fb, twiddles[k * stride])
            let s1 = multiply(fc, twiddles[2 * k * stride])
            let s2 = multiply(fd, twiddles[3 * k * stride])
            let s5 = subtract(fa, s1)
            fa = add(fa, s1)
            let s3 = add(s0, s2)
            let s4 = subtract(s0, s2)
            f[c] = subtract(fa, s3)
            f[a] = add(fa, s3)
            f[b] = Complex(r: s5.r &+ s4.i, i: s5.i &- s4.r)
            f[d] = Complex(r: s5.r &- s4.i, i: s5.i &+ s4.r)
        }
    }

    /// kiss_fftr's last step: the real input's spectrum from the half-length complex one.
    private func realSpectrum(_ half: UnsafeBufferPointer<Complex>, into out: UnsafeMutableBufferPointer<Complex>) {
        let n = Self.complexSize
        let dc = Self.divide(half[0], 2)
        out[0] = Complex(r: dc.r &+ dc.i, i: 0)
        out[n] = Complex(r: dc.r &- dc.i, i: 0)
        superTwiddles.withUnsafeBufferPointer { superTwiddles in
            for k in 1...n / 2 {
                let fpk = Self.divide(half[k], 2)
                let fpnk = Self.divide(Complex(r: half[n - k].r, i: 0 &- half[n - k].i), 2)
                let f1k = Self.add(fpk, fpnk)
                let f2k = Self.subtract(fpk, fpnk)
                let tw = Self.multiply(f2k, superTwiddles[k - 1])
                // HALF_OF acts on the int sum, before it is stored back in 16 bits.
                out[k] = Complex(r: Self.half(Int(f1k.r) + Int(tw.r)), i: Self.half(Int(f1k.i) + Int(tw.i)))
                out[n - k] = Complex(r: Self.half(Int(f1k.r) - Int(tw.r)), i: Self.half(Int(tw.i) - Int(f1k.i)))
            }
        }
    }

    // Products of 16-bit values in a 64-bit Int cannot overflow, so the operators need not check.
    private static func half(_ x: Int) -> Int16 { Int16(truncatingIfNeeded: x >> 1) }
    private static func round(_ x: Int) -> Int16 { Int16(truncatingIfNeeded: (x &+ (1 << 14)) >> 15) }
    private static func multiply(_ a: Complex, _ b: Complex) -> Complex {
        Complex(r: round(Int(a.r) &* Int(b.r) &- Int(a.i) &* Int(b.i)), i: round(Int(a.r) &* Int(b.i) &+ Int(a.i) &* Int(b.r)))
    }
    private static func divide(_ c: Complex, _ k: Int) -> Complex {
        Complex(r: round(Int(c.r) &* (32767 / k)), i: round(Int(c.i) &* (32767 / k)))
    }
    private static func add(_ a: Complex, _ b: Complex) -> Complex { Complex(r: a.r &+ b.r, i: a.i &+ b.i) }
    private static func subtract(_ a: Complex, _ b: Complex) -> Complex { Complex(r: a.r &- b.r, i: a.i &- b.i) }
}
