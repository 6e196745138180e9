// The front end's mel filterbank: the spectrum's energy summed into 40 triangular
// channels from 125 to 7500 Hz with 12-bit weights, then an integer square root,
// as TensorFlow Lite's microfrontend (lib/filterbank.cc, filterbank_util.cc) does
// it. The weights are made with the same single-precision steps (log1pf, floorf)
// so they come out the same integers; the sums wrap as its unsigned 64-bit ones do.
import Glibc

struct MicroFrontendFilterbank: Sendable {
    private static let weightBits: Float = 4096 // 1 << kFilterbankBits
    private static let blockSize = 4 // kFilterbankChannelBlockSize
    private static let indexAlignment = 2 // kFilterbankIndexAlignment / sizeof(int16_t)

    let channelCount: Int
    /// The spectrum bins that carry energy: [startIndex, endIndex).
    let startIndex: Int
    private(set) var endIndex = 0
    /// How far the padded blocks read: past endIndex, where the weights are zero.
    private var readEnd = 0
    private var frequencyStarts: [Int] = []
    private var weightStarts: [Int] = []
    private var widths: [Int] = []
    private var weights: [UInt64] = []
    private var unweights: [UInt64] = []

    init(channelCount: Int, sampleRate: Int, spectrumSize: Int, lowerHz: Float = 125, upperHz: Float = 7500) {
        self.channelCount = channelCount
        let channels = channelCount + 1
        let melLow = Self.mel(lowerHz)
        let melSpacing = (Self.mel(upperHz) - melLow) / Float(channels)
        let centres = (0..<channels).map { melLow + melSpacing * Float($0 + 1) }
        let hzPerBin = 0.5 * Float(sampleRate) / (Float(spectrumSize) - 1)
        startIndex = Int(1.5 + lowerHz / hzPerBin)

        // Where each channel's bins start and how many, padded to blocks of 4 from an aligned start;
        // a channel no bin falls in reads 4 zero weights placed at the very beginning.
        var actualStarts = [Int](repeating: 0, count: channels)
        var actualWidths = [Int](repeating: 0, count: channels)
        frequencyStarts = [Int](repeating: 0, count: channels)
        weightStarts = [Int](repeating: 0, count: channels)
        widths = [Int](repeating: 0, count: channels)
        var channelStart = startIndex
        var weightStart = 0
        var needsZeros = false
        for channel in 0..<channels {
            var bin = channelStart
            while Self.mel(Float(bin) * hzPerBin) <= centres[channel] { bin += 1 }
            let width = bin - channelStart
            actualStarts[channel] = channelStart
            actualWidths[channel] = width
            if width == 0 {
                frequencyStarts[channel] = 0
                weightStarts[channel] = 0
                widths[channel] = Self.blockSize
                if !needsZeros {
                    needsZeros = true
                    for earlier in 0..<channel { weightStarts[earlier] += Self.blockSize }
                    weightStart += Self.blockSize
                }
            } else {
                let alignedStart = channelStart / Self.indexAlignment * Self.indexAlignment
                let alignedWidth = channelStart - alignedStart + width
                let paddedWidth = ((alignedWidth - 1) / Self.blockSize + 1) * Self.blockSize
                frequencyStarts[channel] = alignedStart
                weightStarts[channel] = weightStart
                widths[channel] = paddedWidth
                weightStart += paddedWidth
            }
            channelStart = bin
        }

        weights = [UInt64](repeating: 0, count: weightStart)
        unweights = [UInt64](repeating: 0, count: weightStart)
        for channel in 0..<channels {
            let offset = actualStarts[channel] - frequencyStarts[channel]
            let below = channel == 0 ? melLow : centres[channel - 1]
            for j in 0..<actualWidths[channel] {
                let bin = actualStarts[channel] + j
                let weight = (centres[channel] - Self.mel(Float(bin) * hzPerBin)) / (centres[channel] - below)
                let index = weightStarts[channel] + offset + j
                weights[index] = Self.quantised(weight)
                unweights[index] = Self.quantised(1 - weight)
            }
            endIndex = max(endIndex, actualStarts[channel] + actualWidths[channel])
        }
        precondition(endIndex < spectrumSize, "the filterbank reaches past the spectrum")
        readEnd = zip(frequencyStarts, widths).map { $0 + $1 }.max() ?? 0
    }

    private static func mel(_ hz: Float) -> Float { 1127 * log1pf(hz / 700) }

    /// The weight as the int16 QuantizeFilterbankWeights stores, then widened as the sum reads it.
    private static func quantised(_ weight: Float) -> UInt64 {
        UInt64(bitPattern: Int64(Int16(floorf(weight * weightBits + 0.5))))
    }

    /// The channels' square-rooted energies, shifted down by `shift` (FilterbankSqrt's output).
    // Over buffer pointers, its scratch one temporary buffer where it made two arrays a frame. Most
    // of its time is the square roots.
    func channels(_ spectrum: UnsafeBufferPointer<MicroFrontendFFT.Complex>, shift: Int) -> [UInt32] {
        // The loop below reads unchecked, up to the last channel's padded block.
        precondition(readEnd <= spectrum.count, "the filterbank reads past the spectrum")
        let channels = channelCount + 1
        return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: spectrum.count + channels) { buffer in
            // FilterbankConvertFftComplexToEnergy stores int32 squares that the sum then widens with
            // sign extension; only bins in [startIndex, endIndex) have non-zero weights.
            let energy = UnsafeMutableBufferPointer(rebasing: buffer[0..<spectrum.count])
            let accumulated = UnsafeMutableBufferPointer(rebasing: buffer[spectrum.count...])
            energy.initialize(repeating: 0)
            for bin in startIndex..<endIndex {
                let real = Int32(spectrum[bin].r), imag = Int32(spectrum[bin].i)
                energy[bin] = UInt64(bitPattern: Int64(real &* real &+ imag &* imag))
            }
            weights.withUnsafeBufferPointer { weights in
                unweights.withUnsafeBufferPointer { unweights in
                    var weighted: UInt64 = 0
                    var unweighted: UInt64 = 0
                    for channel in 0..<channels {
                        let frequencyStart = frequencyStarts[channel], weightStart = weightStarts[channel]
                        for j in 0..<widths[channel] {
                            let magnitude = energy[frequencyStart + j]
                            weighted = weighted &+ weights[weightStart + j] &* magnitude
                            unweighted = unweighted &+ unweights[weightStart + j] &* magnitude
                        }
                        accumulated[channel] = weighted
                        weighted = unweighted
                        unweighted = 0
                    }
                }
            }
            return (1..<channels).map { Self.squareRoot(accumulated[$0]) >> UInt32(shift) }
        }
    }

    /// Sqrt64: the integer square root, rounded, with its shortcut to Sqrt32 when the upper word
    /// is clear (off by one near 2^32, as the original says and keeps).
    static func squareRoot(_ value: UInt64) -> UInt32 {
        if value >> 32 == 0 { return UInt32(bitwiseRoot(UInt32(value))) }
        return UInt32(truncatingIfNeeded: bitwiseRoot(value))
    }

    /// Sqrt32 and Sqrt64's shared digit-by-digit method, two bits of the value a step.
    private static func bitwiseRoot<T: FixedWidthInteger & UnsignedInteger>(_ value: T) -> T {
        if value == 0 { return 0 }
        var num = value
        var result: T = 0
        let topBit = value.leadingZeroBitCount | 1 // bits - MostSignificantBit, made odd
        var bit: T = 1 << (T.bitWidth - 1 - topBit)
        for _ in 0..<((T.bitWidth - 1 - topBit) / 2 + 1) {
            if num >= result &+ bit {
                num -= result &+ bit
                result = (result >> 1) &+ bit
            } else {
                result >>= 1
            }
            bit >>= 2
        }
        // Round up, if the result has a bit to spare (0xFFFF for 32 bits, 0xFFFFFFFF for 64).
        if num > result && result != T.max >> (T.bitWidth / 2) { result += 1 }
        return result
    }
}
