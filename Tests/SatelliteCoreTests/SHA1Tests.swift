import Testing
import SatelliteCore

@Suite("SHA-1 for the WebSocket handshake")
struct SHA1Tests {
    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { byte in String(byte, radix: 16).count == 1 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }.joined()
    }

    // The digests are sha1sum's (coreutils) of the same bytes; the second is RFC 6455's own example (4.2.2),
    // whose accept value is s3pPLMBiTxaQ9kYGzzhZRbK+xOo=. The lengths cross the 55- and 64-byte padding edges.
    @Test("the digests agree with sha1sum's, across the padding's edges", arguments: [
        ("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ("dGhlIHNhbXBsZSBub25jZQ==258EAFA5-E914-47DA-95CA-C5AB0DC85B11", "b37a4f2cc0624f1690f64606cf385945b2bec4ea"),
        ("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        (String(repeating: "a", count: 55), "c1c8bbdc22796e28c0e15163d20899b65621d65a"),
        (String(repeating: "a", count: 56), "c2db330f6083854c99d4b5bfb6e8f29f201be699"),
        (String(repeating: "a", count: 64), "0098ba824b5c16427bd7a1122a5a442a25ec644d"),
        (String(repeating: "a", count: 1000), "291e9a6c66994949b57ba5e650361e98fc36b1ba"),
    ])
    func digests(text: String, expected: String) {
        #expect(hex(SHA1.digest(Array(text.utf8))) == expected)
    }
}
