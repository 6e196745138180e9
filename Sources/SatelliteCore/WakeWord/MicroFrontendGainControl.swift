// The front end's per-channel energy normalisation (PCAN: each channel divided by
// a power of its noise estimate, then compressed), as TensorFlow Lite's
// microfrontend (lib/pcan_gain_control.cc, pcan_gain_control_util.cc) does it: a
// lookup table of the gain built once with powf, read with its piecewise-quadratic
// interpolation in integers.
import Glibc

struct MicroFrontendGainControl: Sendable {
    private static let snrBits = 12 // kPcanSnrBits
    private static let outputBits = 6 // kPcanOutputBits
    private static let functionBits = 32 // kWideDynamicFunctionBits
    private static let strength: Float = 0.95
    private static let offset: Float = 80
    private static let gainBits = 21

    /// The table as the C keeps it: entries 0 and 1, then three for each interval from 2
    /// at 4 * interval - 6 (the fourth of each is never read).
    private let table: [Int16]
    private let snrShift: Int

    /// `estimateBits`: the noise estimate's extra bits; `correctionBits`: the filterbank's
    /// (log2 of the FFT size, less 1, less half the filterbank's weight bits).
    init(estimateBits: Int, correctionBits: Int) {
        snrShift = Self.gainBits - correctionBits - Self.snrBits
        let inputBits = estimateBits - correctionBits
        func gain(_ x: UInt32) -> Int16 {
            let xFloat = Float(x) / Float(UInt32(1) << UInt32(inputBits))
            let value = Float(UInt32(1) << UInt32(Self.gainBits)) * powf(xFloat + Self.offset, -Self.strength)
            return value > 32767 ? 32767 : Int16(value + 0.5)
        }
        var table = [Int16](repeating: 0, count: 4 * Self.functionBits - 3)
        table[0] = gain(0)
        table[1] = gain(1)
        for interval in 2...Self.functionBits {
            let x0 = UInt32(1) << UInt32(interval - 1)
            let x1 = x0 + (x0 >> 1)
            let x2 = interval == Self.functionBits ? x0 + (x0 - 1) : 2 * x0
            let y0 = gain(x0), y1 = gain(x1), y2 = gain(x2)
            let diff1 = Int32(y1) - Int32(y0)
            let diff2 = Int32(y2) - Int32(y0)
            let a1 = 4 * diff1 - diff2
            let a2 = diff2 - a1
            let base = 4 * interval - 6
            table[base] = y0
            table[base + 1] = Int16(truncatingIfNeeded: a1)
            table[base + 2] = Int16(truncatingIfNeeded: a2)
        }
        self.table = table
    }

    func apply(_ signal: inout [UInt32], noiseEstimate: [UInt32]) {
        for i in signal.indices {
            let gain = UInt64(UInt32(bitPattern: Int32(wideDynamicFunction(noiseEstimate[i]))))
            let snr = UInt32(truncatingIfNeeded: (UInt64(signal[i]) &* gain) >> UInt64(snrShift))
            signal[i] = Self.shrink(snr)
        }
    }

    /// WideDynamicFunction: the gain for a noise estimate, from the table.
    private func wideDynamicFunction(_ x: UInt32) -> Int16 {
        if x <= 2 { return table[Int(x)] }
        let interval = 32 - x.leadingZeroBitCount
        let base = 4 * interval - 6
        let shifted = interval < 11 ? x << UInt32(11 - interval) : x >> UInt32(interval - 11)
        let frac = Int32(Int16(truncatingIfNeeded: shifted & 0x3FF))
        var result = (Int32(table[base + 2]) &* frac) >> 5
        result = result &+ Int32(bitPattern: UInt32(bitPattern: Int32(table[base + 1])) << 5)
        result = result &* frac
        result = (result &+ (1 << 14)) >> 15
        result = result &+ Int32(table[base])
        return Int16(truncatingIfNeeded: result)
    }

    /// PcanShrink: squares small values, passes larger ones less an offset.
    private static func shrink(_ x: UInt32) -> UInt32 {
        if x < 2 << snrBits {
            return (x &* x) >> UInt32(2 + 2 * snrBits - outputBits)
        }
        return (x >> UInt32(snrBits - outputBits)) &- (1 << outputBits)
    }
}
