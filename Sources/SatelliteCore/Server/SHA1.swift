// SHA-1 (FIPS 180-4), for the one place it is asked for: the WebSocket
// handshake's Sec-WebSocket-Accept (RFC 6455, 4.2.2), which proves nothing
// secret, only that the server read our key. Written here rather than taken
// from OpenSSL: OpenSSL's first digest initialises its library (its config
// file, its providers), and that kept 2.3 MB more resident in a C program here
// (3.0 to 5.3 MB VmRSS, /proc/self/status) for a daemon streaming to a plain
// ws:// server, which otherwise never touches TLS. Not for anything secret.

public enum SHA1 {
    /// The 20-byte digest of `bytes`.
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var h: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
        let message = DigestBlocks.padded(bytes)
        var w = [UInt32](repeating: 0, count: 80)
        for block in stride(from: 0, to: message.count, by: 64) {
            for i in 0..<16 { w[i] = DigestBlocks.word(message, at: block + i * 4) }
            for i in 16..<80 { w[i] = rotate(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1) }
            var (a, b, c, d, e) = (h[0], h[1], h[2], h[3], h[4])
            for i in 0..<80 {
                let (f, k): (UInt32, UInt32)
                switch i {
                case 0..<20: (f, k) = ((b & c) | (~b & d), 0x5A82_7999)
                case 20..<40: (f, k) = (b ^ c ^ d, 0x6ED9_EBA1)
                case 40..<60: (f, k) = ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                default: (f, k) = (b ^ c ^ d, 0xCA62_C1D6)
                }
                let next = rotate(a, 5) &+ f &+ e &+ k &+ w[i]
                (e, d, c, b, a) = (d, c, rotate(b, 30), a, next)
            }
            h[0] &+= a
            h[1] &+= b
            h[2] &+= c
            h[3] &+= d
            h[4] &+= e
        }
        return DigestBlocks.bytes(h)
    }

    private static func rotate(_ value: UInt32, _ count: UInt32) -> UInt32 { value << count | value >> (32 - count) }
}
