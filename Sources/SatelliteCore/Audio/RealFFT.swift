// A single-precision real FFT of one power-of-two length, forward and inverse:
// a radix-2 complex FFT of half the length on split real and imaginary arrays,
// and the usual split of a real sequence's spectrum around it. NoiseSuppressor's
// alone (256 points, twice every 8 ms), hand-written for the reason that file
// gives. Through buffer pointers, its tables made once, nothing allocated per
// call; the first two stages as one pass with no products, and each later
// stage's twiddles side by side, so that four of its butterflies go at once
// (SIMD4): each halved the butterflies' instructions (callgrind). The inverse is
// unnormalised: inverse(forward(x)) is x times the length.
import Glibc

final class RealFFT {
    /// The real sequence's length, and its spectrum's bins (DC to Nyquist).
    let size: Int
    var bins: Int { size / 2 + 1 }
    private let half: Int
    private let bitReversed: UnsafeMutablePointer<Int32>
    /// The half-length FFT's twiddles from its third stage on (the first two need none), each
    /// stage's side by side (a stage of span s has e^(-πij/s) for j < s, from s - 1), and the
    /// split's, e^(-2πik/size).
    private let twiddleRe: UnsafeMutablePointer<Float>
    private let twiddleIm: UnsafeMutablePointer<Float>
    private let splitRe: UnsafeMutablePointer<Float>
    private let splitIm: UnsafeMutablePointer<Float>
    private let workRe: UnsafeMutablePointer<Float>
    private let workIm: UnsafeMutablePointer<Float>

    init(size: Int) {
        precondition(size >= 8 && size & (size - 1) == 0, "RealFFT's size is a power of two, 8 or more")
        self.size = size
        half = size / 2
        let stages = half.trailingZeroBitCount
        bitReversed = .allocate(capacity: half)
        twiddleRe = .allocate(capacity: half)
        twiddleIm = .allocate(capacity: half)
        splitRe = .allocate(capacity: half + 1)
        splitIm = .allocate(capacity: half + 1)
        workRe = .allocate(capacity: half)
        workIm = .allocate(capacity: half)
        for index in 0..<half {
            var reversed = 0
            for bit in 0..<stages where index & (1 << bit) != 0 { reversed |= 1 << (stages - 1 - bit) }
            bitReversed[index] = Int32(reversed)
        }
        var span = 4
        while span < half {
            for j in 0..<span {
                let phase = -Double.pi * Double(j) / Double(span)
                twiddleRe[span - 1 + j] = Float(cos(phase))
                twiddleIm[span - 1 + j] = Float(sin(phase))
            }
            span *= 2
        }
        for k in 0...half {
            let phase = -2 * Double.pi * Double(k) / Double(size)
            splitRe[k] = Float(cos(phase))
            splitIm[k] = Float(sin(phase))
        }
    }

    deinit {
        for pointer in [twiddleRe, twiddleIm, splitRe, splitIm, workRe, workIm] { pointer.deallocate() }
        bitReversed.deallocate()
    }

    /// The spectrum of `input` (`size` samples) into `re` and `im` (`bins` each).
    func forward(_ input: UnsafePointer<Float>, re: UnsafeMutablePointer<Float>, im: UnsafeMutablePointer<Float>) {
        // The even samples as the real part, the odd as the imaginary, in bit-reversed order.
        for index in 0..<half {
            let from = Int(bitReversed[index])
            workRe[index] = input[2 * from]
            workIm[index] = input[2 * from + 1]
        }
        butterflies()
        // X[k] = E[k] + W^k O[k], with E and O unpicked from Z[k] and conj(Z[half - k]).
        re[0] = workRe[0] + workIm[0]
        im[0] = 0
        re[half] = workRe[0] - workIm[0]
        im[half] = 0
        for k in 1..<half {
            let zr = workRe[k], zi = workIm[k], cr = workRe[half - k], ci = -workIm[half - k]
            let er = 0.5 * (zr + cr), ei = 0.5 * (zi + ci)
            // O = (Z - conj Z') / 2i
            let or = 0.5 * (zi - ci), oi = -0.5 * (zr - cr)
            let wr = splitRe[k], wi = splitIm[k]
            re[k] = er + wr * or - wi * oi
            im[k] = ei + wr * oi + wi * or
        }
    }

    /// The real sequence (`size` samples, times `size`) of the spectrum `re`, `im` (`bins` each) into `output`.
    func inverse(re: UnsafePointer<Float>, im: UnsafePointer<Float>, into output: UnsafeMutablePointer<Float>) {
        // E[k] = (X[k] + conj X[half - k]) / 2, O[k] = (X[k] - conj X[half - k]) W^-k / 2, Z = E + iO;
        // doubled here, which with the half-length inverse's own factor makes the whole length's.
        for k in 0..<half {
            let xr = re[k], xi = im[k], cr = re[half - k], ci = -im[half - k]
            let er = xr + cr, ei = xi + ci
            let dr = xr - cr, di = xi - ci
            let wr = splitRe[k], wi = -splitIm[k]
            let or = dr * wr - di * wi, oi = dr * wi + di * wr
            // Z = E + iO, stored conjugated: the forward butterflies then make the inverse.
            let target = Int(bitReversed[k])
            workRe[target] = er - oi
            workIm[target] = -(ei + or)
        }
        butterflies()
        for index in 0..<half {
            output[2 * index] = workRe[index]
            output[2 * index + 1] = -workIm[index]
        }
    }

    /// The half-length FFT in place on the work arrays, their input already in bit-reversed order.
    private func butterflies() {
        // The first two stages at once, for each four: their twiddles are 1 and -i, no products.
        for start in Swift.stride(from: 0, to: half, by: 4) {
            let r = workRe + start, i = workIm + start
            let (s0r, s0i, d0r, d0i) = (r[0] + r[1], i[0] + i[1], r[0] - r[1], i[0] - i[1])
            let (s1r, s1i, d1r, d1i) = (r[2] + r[3], i[2] + i[3], r[2] - r[3], i[2] - i[3])
            (r[0], i[0], r[2], i[2]) = (s0r + s1r, s0i + s1i, s0r - s1r, s0i - s1i)
            (r[1], i[1], r[3], i[3]) = (d0r + d1i, d0i - d1r, d0r - d1i, d0i + d1r)
        }
        var span = 4
        while span < half {
            let wRe = twiddleRe + (span - 1), wIm = twiddleIm + (span - 1)
            var start = 0
            while start < half {
                let aRe = workRe + start, aIm = workIm + start, bRe = aRe + span, bIm = aIm + span
                for j in Swift.stride(from: 0, to: span, by: 4) {
                    let wr = (wRe + j).four, wi = (wIm + j).four
                    let xr = (bRe + j).four, xi = (bIm + j).four
                    let br = xr * wr - xi * wi, bi = xr * wi + xi * wr
                    let ar = (aRe + j).four, ai = (aIm + j).four
                    (bRe + j).four = ar - br
                    (bIm + j).four = ai - bi
                    (aRe + j).four = ar + br
                    (aIm + j).four = ai + bi
                }
                start += 2 * span
            }
            span *= 2
        }
    }
}
