// Replies arrive as one RIFF WAV in whatever layout the server's voice wrote
// (Kokoro: 24 kHz float32; `say`: 22.05 kHz PCM16), and /voice takes 16 kHz PCM16.
// Easy to get wrong: trusting a size the file does not back up, the pad byte
// after an odd chunk, EXTENSIBLE's subformat GUID, and allocating per sample.


/// Decodes every common WAV layout to 16-bit samples, and writes the one layout /voice takes.
///
/// Decoding walks the RIFF chunks, skipping any it does not know (`LIST`, `fact`, …),
/// and needs `fmt ` before `data`. Sizes are checked against the bytes present before
/// anything is read:
/// - A `data` chunk that declares more bytes than are there is `WAVError.truncated`,
///   not a shorter answer: a server that closed mid-reply sends exactly that, and
///   playing the part that arrived would pass a cut answer off as a whole one.
/// - A `data` size of 0 or 0xFFFFFFFF, which writers that stream to a pipe leave
///   in the header, means "to the end of the file".
/// - The RIFF size is ignored, for the same streaming writers.
///
/// Samples are converted with rounding: 24- and 32-bit PCM are shifted down to
/// 16 bits, float is clipped to [-1, 1] and multiplied by 32768 (so float written
/// from 16-bit samples comes back exact), 8-bit is unsigned and re-centred.
public enum WAV {
    /// The 16-bit samples, rate and channels of a WAV file.
    public static func decode(_ data: [UInt8]) throws(WAVError) -> PCMAudio {
        // withUnsafeBytes only rethrows untyped errors, so the result is carried out.
        let result = data.withUnsafeBytes { bytes -> Result<PCMAudio, WAVError> in
            do throws(WAVError) {
                return .success(try decode(bytes: bytes))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// A canonical 44-byte-header PCM 16-bit WAV of `audio`.
    public static func encode(_ audio: PCMAudio) -> [UInt8] {
        let dataBytes = audio.samples.count * 2
        var out: [UInt8] = []
        out.reserveCapacity(44 + dataBytes)
        func append<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
        }
        append(Tag.riff)
        append(UInt32(clamping: 36 + dataBytes))
        append(Tag.wave)
        append(Tag.fmt)
        append(UInt32(16))
        append(UInt16(1))
        append(UInt16(clamping: audio.channels))
        append(UInt32(clamping: audio.sampleRate))
        append(UInt32(clamping: audio.sampleRate * audio.channels * 2))
        append(UInt16(clamping: audio.channels * 2))
        append(UInt16(16))
        append(Tag.data)
        append(UInt32(clamping: dataBytes))
        #if _endian(little)
        audio.samples.withUnsafeBytes { out.append(contentsOf: $0) }
        #else
        for sample in audio.samples { append(sample) }
        #endif
        return out
    }
}

extension WAV {
    /// Four-character codes, read as little-endian 32-bit words.
    enum Tag {
        static let riff: UInt32 = 0x4646_4952  // "RIFF"
        static let wave: UInt32 = 0x4556_4157  // "WAVE"
        static let fmt: UInt32 = 0x2074_6D66  // "fmt "
        static let data: UInt32 = 0x6174_6164  // "data"
    }

    enum Encoding {
        case unsigned8, signed16, signed24, signed32, float32, float64
    }

    struct Format {
        var encoding: Encoding
        var channels: Int
        var sampleRate: Int
        var blockAlign: Int
    }

    static let pcmTag = 0x0001
    static let floatTag = 0x0003
    static let extensibleTag = 0xFFFE
    /// The last 12 bytes every KSDATAFORMAT_SUBTYPE GUID for a classic format tag shares;
    /// the first 4 are the tag itself.
    static let subformatTail: [UInt8] = [0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]

    static func decode(bytes: UnsafeRawBufferPointer) throws(WAVError) -> PCMAudio {
        guard bytes.count >= 12, bytes.u32(0) == Tag.riff, bytes.u32(8) == Tag.wave else { throw .notWAV }
        var format: Format?
        var offset = 12
        // Offsets are Int and sizes at most 2^32, so no sum below can overflow;
        // every size is compared with what is left before it is used.
        while bytes.count - offset >= 8 {
            let id = bytes.u32(offset)
            let size = Int(bytes.u32(offset + 4))
            let body = offset + 8
            let available = bytes.count - body
            if id == Tag.data {
                guard let format else { throw .missingFormat }
                let length: Int
                if size == 0 || size == 0xFFFF_FFFF {
                    length = available
                } else {
                    guard size <= available else {
                        throw .truncated(chunk: "data", declared: size, present: available)
                    }
                    length = size
                }
                return try audio(UnsafeRawBufferPointer(rebasing: bytes[body..<body + length]), format)
            }
            guard size <= available else {
                throw .truncated(chunk: chunkName(bytes, at: offset), declared: size, present: available)
            }
            if id == Tag.fmt {
                format = try parseFormat(UnsafeRawBufferPointer(rebasing: bytes[body..<body + size]))
            }
            offset = body + size + (size & 1)
        }
        throw .missingData
    }

    static func parseFormat(_ fmt: UnsafeRawBufferPointer) throws(WAVError) -> Format {
        guard fmt.count >= 16 else { throw .formatTooShort(bytes: fmt.count, needed: 16) }
        var tag = Int(fmt.u16(0))
        let channels = Int(fmt.u16(2))
        let sampleRate = Int(fmt.u32(4))
        let blockAlign = Int(fmt.u16(12))
        let bits = Int(fmt.u16(14))
        if tag == extensibleTag {
            guard fmt.count >= 40 else { throw .formatTooShort(bytes: fmt.count, needed: 40) }
            let subformat = Int(fmt.u32(24))
            guard fmt[28..<40].elementsEqual(subformatTail) else {
                throw .unsupportedEncoding("WAVE_FORMAT_EXTENSIBLE with subformat \(guid(fmt, at: 24))")
            }
            tag = subformat
        }
        let encoding: Encoding
        switch (tag, bits) {
        case (pcmTag, 8): encoding = .unsigned8
        case (pcmTag, 16): encoding = .signed16
        case (pcmTag, 24): encoding = .signed24
        case (pcmTag, 32): encoding = .signed32
        case (floatTag, 32): encoding = .float32
        case (floatTag, 64): encoding = .float64
        case (pcmTag, _): throw .unsupportedEncoding("\(bits)-bit PCM")
        case (floatTag, _): throw .unsupportedEncoding("\(bits)-bit float")
        default: throw .unsupportedEncoding(encodingName(tag))
        }
        guard (1...8).contains(channels) else { throw .unsupportedChannelCount(channels) }
        guard (8000...192_000).contains(sampleRate) else { throw .unsupportedSampleRate(sampleRate) }
        let expected = channels * bits / 8
        guard blockAlign == expected else { throw .inconsistentBlockAlign(blockAlign: blockAlign, expected: expected) }
        return Format(encoding: encoding, channels: channels, sampleRate: sampleRate, blockAlign: blockAlign)
    }

    /// Converts the `data` bytes in one pass into a buffer allocated once.
    static func audio(_ src: UnsafeRawBufferPointer, _ format: Format) throws(WAVError) -> PCMAudio {
        guard src.count % format.blockAlign == 0 else {
            throw .partialFrame(bytes: src.count, blockAlign: format.blockAlign)
        }
        guard src.count > 0 else { throw .noFrames }
        let count = src.count / format.blockAlign * format.channels
        let samples = [Int16](unsafeUninitializedCapacity: count) { out, initialized in
            switch format.encoding {
            case .unsigned8:
                for i in 0..<count { out[i] = Int16(Int(src[i]) - 128) << 8 }
            case .signed16:
                for i in 0..<count { out[i] = Int16(littleEndian: src.loadUnaligned(fromByteOffset: 2 * i, as: Int16.self)) }
            case .signed24:
                for i in 0..<count {
                    let at = 3 * i
                    let value = Int32(src[at]) | Int32(src[at + 1]) << 8 | Int32(Int8(bitPattern: src[at + 2])) << 16
                    out[i] = Int16(clamping: (value + 128) >> 8)
                }
            case .signed32:
                for i in 0..<count {
                    let value = Int64(Int32(littleEndian: src.loadUnaligned(fromByteOffset: 4 * i, as: Int32.self)))
                    out[i] = Int16(clamping: (value + 32768) >> 16)
                }
            case .float32:
                for i in 0..<count {
                    let bits = UInt32(littleEndian: src.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self))
                    out[i] = int16(Double(Float(bitPattern: bits)))
                }
            case .float64:
                for i in 0..<count {
                    let bits = UInt64(littleEndian: src.loadUnaligned(fromByteOffset: 8 * i, as: UInt64.self))
                    out[i] = int16(Double(bitPattern: bits))
                }
            }
            initialized = count
        }
        return PCMAudio(sampleRate: format.sampleRate, channels: format.channels, samples: samples)
    }

    /// A float sample clipped to [-1, 1] and scaled by 32768 with rounding; NaN is silence.
    @inline(__always)
    static func int16(_ x: Double) -> Int16 {
        guard !x.isNaN else { return 0 }
        let clipped = x > 1 ? 1 : (x < -1 ? -1 : x)
        return Int16(clamping: Int((clipped * 32768).rounded()))
    }

    static func encodingName(_ tag: Int) -> String {
        switch tag {
        case 0x0002: return "Microsoft ADPCM"
        case 0x0006: return "A-law"
        case 0x0007: return "µ-law"
        case 0x0011: return "IMA ADPCM"
        case 0x0031: return "GSM 6.10"
        case 0x0050: return "MPEG audio"
        case 0x0055: return "MP3"
        case extensibleTag: return "WAVE_FORMAT_EXTENSIBLE inside WAVE_FORMAT_EXTENSIBLE"
        default: return "format tag 0x" + hex(tag, width: 4)
        }
    }

    static func chunkName(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> String {
        let scalars = bytes[offset..<offset + 4].map { (0x20..<0x7F).contains($0) ? Character(UnicodeScalar($0)) : "?" }
        return String(scalars).trimmingSpaces()
    }

    static func guid(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> String {
        let tail = bytes[(offset + 8)..<(offset + 16)].map { hex(Int($0), width: 2) }
        return "{" + hex(Int(bytes.u32(offset)), width: 8) + "-" + hex(Int(bytes.u16(offset + 4)), width: 4)
            + "-" + hex(Int(bytes.u16(offset + 6)), width: 4) + "-" + tail[0..<2].joined()
            + "-" + tail[2..<8].joined() + "}"
    }

    static func hex(_ value: Int, width: Int) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

extension UnsafeRawBufferPointer {
    /// Little-endian fields at byte offsets the caller has bounds-checked.
    fileprivate func u16(_ offset: Int) -> UInt16 { UInt16(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self)) }
    fileprivate func u32(_ offset: Int) -> UInt32 { UInt32(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self)) }
}
