// The message layout SHA-1 and SHA-256 share (FIPS 180-4, 5.1.1 and 5.2.1):
// the bytes, a 1 bit, zeros, and the length in bits, in 64-byte blocks of
// big-endian words; and the digest as its words' big-endian bytes.

enum DigestBlocks {
    /// `bytes` padded to a whole number of 64-byte blocks.
    static func padded(_ bytes: [UInt8]) -> [UInt8] {
        var message = bytes
        let bits = UInt64(bytes.count) &* 8
        message.append(0x80)
        while message.count % 64 != 56 { message.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { message.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        return message
    }

    /// The big-endian word at `at`.
    static func word(_ message: [UInt8], at: Int) -> UInt32 {
        UInt32(message[at]) << 24 | UInt32(message[at + 1]) << 16 | UInt32(message[at + 2]) << 8 | UInt32(message[at + 3])
    }

    /// `words` as big-endian bytes.
    static func bytes(_ words: [UInt32]) -> [UInt8] {
        words.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> UInt32(24 - $0 * 8)) } }
    }
}
