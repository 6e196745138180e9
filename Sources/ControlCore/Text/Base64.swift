// base64 (RFC 4648 section 4, and section 5's URL alphabet), by hand: Data's
// base64 is FoundationEssentials', which parlourctl does not link (7 MB of
// it; BENCHMARKS.md, "What each binary weighs"), nor does the daemon. Used for a server key, a callback's result, the socket's handshake,
// and a spoken answer's audio.

/// base64 encoding and strict decoding.
public enum Base64 {
    static let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    static let url = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The bytes as base64 in `alphabet`, with `=` padding when `padded`.
    public static func encode(_ bytes: some Collection<UInt8>, urlSafe: Bool = false, padded: Bool = true) -> String {
        let alphabet = urlSafe ? url : standard
        let bytes = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let left = bytes.count - i
            let chunk = UInt32(bytes[i]) << 16 | (left > 1 ? UInt32(bytes[i + 1]) << 8 : 0) | (left > 2 ? UInt32(bytes[i + 2]) : 0)
            for k in 0..<4 {
                if k <= min(left, 3) {
                    out.append(alphabet[Int(chunk >> UInt32(18 - 6 * k) & 0x3F)])
                } else if padded {
                    out.append(UInt8(ascii: "="))
                }
            }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Each byte's place in the alphabet; 0xFF for a byte that is not in it.
    static let standardPlaces = places(standard)
    static let urlPlaces = places(url)

    private static func places(_ alphabet: [UInt8]) -> [UInt8] {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (place, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(place) }
        return table
    }

    /// The bytes of base64 text in `alphabet`; nil for any other character, a bad length, or
    /// padding where there should be none (or, when `padded`, none where there should be).
    /// A table, four characters at a time: a spoken answer's audio is megabytes of it.
    public static func decode(_ text: some StringProtocol, urlSafe: Bool = false, padded: Bool = true) -> [UInt8]? {
        let body = Array(text.utf8)
        var end = body.count
        if padded {
            guard end % 4 == 0 else { return nil }
            while end > 0, body[end - 1] == UInt8(ascii: "=") { end -= 1 }
            guard body.count - end <= 2 else { return nil }
        }
        guard end % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(end / 4 * 3 + 2)
        let table = urlSafe ? urlPlaces : standardPlaces
        let whole = table.withUnsafeBufferPointer { place in
            body.withUnsafeBufferPointer { text -> Bool in
                func value(_ i: Int) -> UInt32 { UInt32(place[Int(text[i])]) }
                var i = 0
                while i + 4 <= end {
                    let (a, b, c, d) = (value(i), value(i + 1), value(i + 2), value(i + 3))
                    guard (a | b | c | d) & 0xC0 == 0 else { return false }
                    let chunk = a << 18 | b << 12 | c << 6 | d
                    out.append(UInt8(truncatingIfNeeded: chunk >> 16))
                    out.append(UInt8(truncatingIfNeeded: chunk >> 8))
                    out.append(UInt8(truncatingIfNeeded: chunk))
                    i += 4
                }
                switch end - i {
                case 2:
                    let (a, b) = (value(i), value(i + 1))
                    guard (a | b) & 0xC0 == 0 else { return false }
                    out.append(UInt8(truncatingIfNeeded: (a << 6 | b) >> 4))
                case 3:
                    let (a, b, c) = (value(i), value(i + 1), value(i + 2))
                    guard (a | b | c) & 0xC0 == 0 else { return false }
                    let chunk = a << 12 | b << 6 | c
                    out.append(UInt8(truncatingIfNeeded: chunk >> 10))
                    out.append(UInt8(truncatingIfNeeded: chunk >> 2))
                default: break
                }
                return true
            }
        }
        return whole ? out : nil
    }
}
