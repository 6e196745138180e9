// The front end's last step: a fixed-point natural log of each channel, scaled by
// 2^6 and clipped to 16 bits, as TensorFlow Lite's microfrontend (lib/log_scale.cc,
// log_lut.cc) computes it, with its 129-entry correction table for log2's fraction.
enum MicroFrontendLogScale {
    private static let scaleLog2: UInt32 = 16 // kLogScaleLog2
    private static let segmentsLog2: UInt32 = 7 // kLogSegmentsLog2
    private static let coefficient: UInt64 = 45426 // kLogCoeff: ln 2 in 16 bits
    private static let scaleShift: UInt32 = 6
    private static let table: [Int32] = [
        0, 224, 442, 654, 861, 1063, 1259, 1450, 1636, 1817, 1992, 2163, 2329, 2490, 2646, 2797, 2944, 3087,
        3224, 3358, 3487, 3611, 3732, 3848, 3960, 4068, 4172, 4272, 4368, 4460, 4549, 4633, 4714, 4791, 4864,
        4934, 5001, 5063, 5123, 5178, 5231, 5280, 5326, 5368, 5408, 5444, 5477, 5507, 5533, 5557, 5578, 5595,
        5610, 5622, 5631, 5637, 5640, 5641, 5638, 5633, 5626, 5615, 5602, 5586, 5568, 5547, 5524, 5498, 5470,
        5439, 5406, 5370, 5332, 5291, 5249, 5203, 5156, 5106, 5054, 5000, 4944, 4885, 4825, 4762, 4697, 4630,
        4561, 4490, 4416, 4341, 4264, 4184, 4103, 4020, 3935, 3848, 3759, 3668, 3575, 3481, 3384, 3286, 3186,
        3084, 2981, 2875, 2768, 2659, 2549, 2437, 2323, 2207, 2090, 1971, 1851, 1729, 1605, 1480, 1353, 1224,
        1094, 963, 830, 695, 559, 421, 282, 142, 0, 0,
    ]

    /// LogScaleApply: each value shifted by `correctionBits`, then its scaled log (0 for 0 and 1).
    static func apply(_ signal: [UInt32], correctionBits: Int) -> [UInt16] {
        signal.map { raw in
            let value = correctionBits < 0 ? raw >> UInt32(-correctionBits) : raw << UInt32(correctionBits)
            let logged = value > 1 ? log(value) : 0
            return UInt16(min(logged, 0xFFFF))
        }
    }

    private static func log(_ x: UInt32) -> UInt32 {
        let integer = UInt32(31 - x.leadingZeroBitCount) // MostSignificantBit32 - 1
        let log2 = (integer << scaleLog2) &+ fractionPart(x, integer)
        let round: UInt64 = 1 << (scaleLog2 - 1)
        let natural = UInt32(truncatingIfNeeded: (coefficient * UInt64(log2) + round) >> UInt64(scaleLog2))
        return UInt32(truncatingIfNeeded: (UInt64(natural << scaleShift) + round) >> UInt64(scaleLog2))
    }

    /// Log2FractionPart: log2's fraction as a 16-bit fixed-point number, corrected from the table.
    private static func fractionPart(_ x: UInt32, _ log2x: UInt32) -> UInt32 {
        var frac = Int32(truncatingIfNeeded: Int64(x) - (Int64(1) << Int64(log2x)))
        if log2x < scaleLog2 {
            frac = frac << Int32(scaleLog2 - log2x)
        } else {
            frac = frac >> Int32(log2x - scaleLog2)
        }
        let segment = Int(UInt32(bitPattern: frac) >> (scaleLog2 - segmentsLog2))
        let segmentUnit = Int32((1 << scaleLog2) >> segmentsLog2)
        let c0 = table[segment], c1 = table[segment + 1]
        let relative = ((c1 - c0) &* (frac - segmentUnit * Int32(segment))) >> Int32(scaleLog2)
        return UInt32(bitPattern: frac &+ c0 &+ relative)
    }
}
