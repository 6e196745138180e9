// The front end's 512-point real FFT in 16-bit fixed point: KISS FFT built with
// FIXED_POINT=16 (kiss_fftr over a 256-point complex kiss_fft, radix 4 only), as
// TensorFlow Lite's microfrontend (lib/fft.cc, kiss_fft_int16.cc) compiles it.
// Hand-written for the reason MicroFrontend.swift gives; every store truncates to
// 16 bits and every product rounds as KISS FFT's sround does, so the spectrum is
// the same bit for bit, and with it the features. The three stages after the
// first, and the last step, go four at a time in 32-bit lanes (fourButterflies
// says why that is exact), and the first stage makes only the half of each
// product that is not a product with zero: the butterflies were half the front
// end's time, and its instructions fell by a third (callgrind, 20 s of noise
// through wakeword-bench, 399 to 269 million).
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

    /// The twiddles of the stages of m = 4, 16 and 64 (strides 16, 4 and 1), each stage's side by
    /// side from `stageOffset(m)`: w^k, w^2k and w^3k for k < m, the real parts then the imaginary,
    /// as Int32 for the butterflies four at a time.
    private let stageTwiddles: [Int32]
    /// kiss_fftr's super twiddles, real and imaginary parts, as Int32 for realSpectrum's lanes.
    private let superRe: [Int32]
    private let superIm: [Int32]

    init() {
        // The lanes load four of them as eight Int16s, r then i.
        precondition(MemoryLayout<Complex>.stride == 4 && MemoryLayout<Complex>.offset(of: \.i) == 2)
        let n = Self.complexSize
        let twiddles = (0..<n).map { k in Self.exp(-2 * Double.pi * Double(k) / Double(n)) }
        let superTwiddles = (0..<n / 2).map { k in Self.exp(-Double.pi * (Double(k + 1) / Double(n) + 0.5)) }
        superRe = superTwiddles.map { Int32($0.r) }
        superIm = superTwiddles.map { Int32($0.i) }
        var table: [Int32] = []
        for m in [4, 16, 64] {
            let stride = n / (4 * m)
            for power in 1...3 {
                table += (0..<m).map { Int32(twiddles[power * $0 * stride].r) }
                table += (0..<m).map { Int32(twiddles[power * $0 * stride].i) }
            }
        }
        stageTwiddles = table
    }

    private static func stageOffset(_ m: Int) -> Int { 2 * (m - 4) }

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
            stageTwiddles.withUnsafeBufferPointer { stages in
                Self.work(half, 0, UnsafeBufferPointer(packed), 0, stride: 1, m: Self.complexSize / 4, stages)
            }
            realSpectrum(UnsafeBufferPointer(half), into: spectrum)
        }
    }

    /// kf_work for 256 = 4 · 4 · 4 · 4 (kf_factor's answer, radix 4 only): four decimated transforms
    /// of length `m` each, then one radix-4 stage to join them.
    private static func work(_ out: UnsafeMutableBufferPointer<Complex>, _ outStart: Int, _ input: UnsafeBufferPointer<Complex>,
                             _ inStart: Int, stride: Int, m: Int, _ stages: UnsafeBufferPointer<Int32>) {
        if m == 1 {
            leaf(out.baseAddress! + outStart, input.baseAddress! + inStart, stride: stride)
        } else {
            for j in 0..<4 {
                work(out, outStart + j * m, input, inStart + j * stride, stride: stride * 4, m: m / 4, stages)
            }
            fourButterflies(out.baseAddress! + outStart, m: m, stages.baseAddress! + stageOffset(m))
        }
    }

    /// KISS FFT's kf_bfly4 where m is 1 (the first stage), reading its inputs where they are: its twiddle is
    /// w^0 = 32767 + 0i, whose products with zero are zero, so only half of each product is made.
    private static func leaf(_ f: UnsafeMutablePointer<Complex>, _ input: UnsafePointer<Complex>, stride: Int) {
        var fa = divide(input[0], 4)
        let fb = divide(input[stride], 4), fc = divide(input[2 * stride], 4), fd = divide(input[3 * stride], 4)
        let s0 = Complex(r: round(Int(fb.r) &* 32767), i: round(Int(fb.i) &* 32767))
        let s1 = Complex(r: round(Int(fc.r) &* 32767), i: round(Int(fc.i) &* 32767))
        let s2 = Complex(r: round(Int(fd.r) &* 32767), i: round(Int(fd.i) &* 32767))
        let s5 = subtract(fa, s1)
        fa = add(fa, s1)
        let s3 = add(s0, s2)
        let s4 = subtract(s0, s2)
        f[2] = subtract(fa, s3)
        f[0] = add(fa, s3)
        f[1] = Complex(r: s5.r &+ s4.i, i: s5.i &- s4.r)
        f[3] = Complex(r: s5.r &- s4.i, i: s5.i &+ s4.r)
    }

    /// kf_bfly4 four k at a time (m a multiple of 4), on the same 16-bit values: each product of
    /// two of them and each sum of two products fits in 32 bits (32768 · 32767 · 2 < 2^31), so
    /// Int32 lanes give what the C's int32 gives, and every store truncates to 16 bits as there.
    private static func fourButterflies(_ f: UnsafeMutablePointer<Complex>, m: Int, _ stage: UnsafePointer<Int32>) {
        let raw = UnsafeMutableRawPointer(f)
        for k in Swift.stride(from: 0, to: m, by: 4) {
            let (ar, ai) = load(raw, k), (br, bi) = load(raw, k + m), (cr, ci) = load(raw, k + 2 * m), (dr, di) = load(raw, k + 3 * m)
            var (far, fai) = (divided(ar, by: 4), divided(ai, by: 4))
            let (fbr, fbi) = (divided(br, by: 4), divided(bi, by: 4)), (fcr, fci) = (divided(cr, by: 4), divided(ci, by: 4))
            let (fdr, fdi) = (divided(dr, by: 4), divided(di, by: 4))
            let (s0r, s0i) = product(fbr, fbi, twiddle(stage, m, 0, k), twiddle(stage, m, 1, k))
            let (s1r, s1i) = product(fcr, fci, twiddle(stage, m, 2, k), twiddle(stage, m, 3, k))
            let (s2r, s2i) = product(fdr, fdi, twiddle(stage, m, 4, k), twiddle(stage, m, 5, k))
            let (s5r, s5i) = (wrap(far &- s1r), wrap(fai &- s1i))
            (far, fai) = (wrap(far &+ s1r), wrap(fai &+ s1i))
            let (s3r, s3i) = (wrap(s0r &+ s2r), wrap(s0i &+ s2i))
            let (s4r, s4i) = (wrap(s0r &- s2r), wrap(s0i &- s2i))
            store(raw, k + 2 * m, far &- s3r, fai &- s3i)
            store(raw, k, far &+ s3r, fai &+ s3i)
            store(raw, k + m, s5r &+ s4i, s5i &- s4r)
            store(raw, k + 3 * m, s5r &- s4i, s5i &+ s4r)
        }
    }

    private typealias Lanes = SIMD4<Int32>

    /// Complexes `index` to `index + 3`, their real parts and their imaginary parts.
    private static func load(_ raw: UnsafeMutableRawPointer, _ index: Int) -> (Lanes, Lanes) {
        let pairs = raw.loadUnaligned(fromByteOffset: index * MemoryLayout<Complex>.stride, as: SIMD8<Int16>.self)
        return (Lanes(truncatingIfNeeded: pairs.evenHalf), Lanes(truncatingIfNeeded: pairs.oddHalf))
    }

    /// Stored at `index` to `index + 3`, each part truncated to 16 bits.
    private static func store(_ raw: UnsafeMutableRawPointer, _ index: Int, _ r: Lanes, _ i: Lanes) {
        var pairs = SIMD8<Int16>()
        pairs.evenHalf = SIMD4<Int16>(truncatingIfNeeded: r)
        pairs.oddHalf = SIMD4<Int16>(truncatingIfNeeded: i)
        raw.storeBytes(of: pairs, toByteOffset: index * MemoryLayout<Complex>.stride, as: SIMD8<Int16>.self)
    }

    /// The stage's run `run` (w^k, w^2k, w^3k; real, imaginary) at k to k + 3.
    private static func twiddle(_ stage: UnsafePointer<Int32>, _ m: Int, _ run: Int, _ k: Int) -> Lanes {
        UnsafeRawPointer(stage + run * m + k).loadUnaligned(as: Lanes.self)
    }

    /// A 32-bit value stored in 16 bits and read back.
    private static func wrap(_ x: Lanes) -> Lanes { (x &<< 16) &>> 16 }
    private static func round(_ x: Lanes) -> Lanes { wrap((x &+ (1 << 14)) &>> 15) }
    /// divide's lanes: C_FIXDIV, a product with 32767 / k.
    private static func divided(_ x: Lanes, by k: Int32) -> Lanes { round(x &* Lanes(repeating: 32767 / k)) }
    private static func product(_ ar: Lanes, _ ai: Lanes, _ br: Lanes, _ bi: Lanes) -> (Lanes, Lanes) {
        (round(ar &* br &- ai &* bi), round(ar &* bi &+ ai &* br))
    }

    /// kiss_fftr's last step: the real input's spectrum from the half-length complex one, four k
    /// at a time (and k and n - k together) in 32-bit lanes, exact as fourButterflies is.
    private func realSpectrum(_ half: UnsafeBufferPointer<Complex>, into out: UnsafeMutableBufferPointer<Complex>) {
        let n = Self.complexSize
        let dc = Self.divide(half[0], 2)
        out[0] = Complex(r: dc.r &+ dc.i, i: 0)
        out[n] = Complex(r: dc.r &- dc.i, i: 0)
        let input = UnsafeMutableRawPointer(mutating: half.baseAddress!), output = UnsafeMutableRawPointer(out.baseAddress!)
        superRe.withUnsafeBufferPointer { superRe in
            superIm.withUnsafeBufferPointer { superIm in
                for k in Swift.stride(from: 1, to: n / 2, by: 4) {
                    let (pr, pi) = Self.load(input, k), (qr, qi) = Self.load(input, n - k - 3)
                    let (fpkR, fpkI) = (Self.divided(pr, by: 2), Self.divided(pi, by: 2))
                    let (fpnkR, fpnkI) = (Self.divided(Self.reversed(qr), by: 2), Self.divided(Self.wrap(0 &- Self.reversed(qi)), by: 2))
                    let (f1kR, f1kI) = (Self.wrap(fpkR &+ fpnkR), Self.wrap(fpkI &+ fpnkI))
                    let (f2kR, f2kI) = (Self.wrap(fpkR &- fpnkR), Self.wrap(fpkI &- fpnkI))
                    let twR = UnsafeRawPointer(superRe.baseAddress! + k - 1).loadUnaligned(as: Lanes.self)
                    let twI = UnsafeRawPointer(superIm.baseAddress! + k - 1).loadUnaligned(as: Lanes.self)
                    let (tR, tI) = Self.product(f2kR, f2kI, twR, twI)
                    // HALF_OF acts on the int sum, before it is stored back in 16 bits.
                    Self.store(output, k, (f1kR &+ tR) &>> 1, (f1kI &+ tI) &>> 1)
                    // k = n/2 is both: this second store is the one kept, as in the C.
                    Self.store(output, n - k - 3, Self.reversed((f1kR &- tR) &>> 1), Self.reversed((tI &- f1kI) &>> 1))
                }
            }
        }
    }

    private static func reversed(_ x: Lanes) -> Lanes { Lanes(x[3], x[2], x[1], x[0]) }

    // Products of 16-bit values in a 64-bit Int cannot overflow, so the operators need not check.
    private static func round(_ x: Int) -> Int16 { Int16(truncatingIfNeeded: (x &+ (1 << 14)) >> 15) }
    private static func divide(_ c: Complex, _ k: Int) -> Complex {
        Complex(r: round(Int(c.r) &* (32767 / k)), i: round(Int(c.i) &* (32767 / k)))
    }
    private static func add(_ a: Complex, _ b: Complex) -> Complex { Complex(r: a.r &+ b.r, i: a.i &+ b.i) }
    private static func subtract(_ a: Complex, _ b: Complex) -> Complex { Complex(r: a.r &- b.r, i: a.i &- b.i) }
}
