// base64 (RFC 4648 section 4, and section 5's URL alphabet), by hand: Data's
// base64 is FoundationEssentials', which parlourctl does not link (7 MB of
// it; BENCHMARKS.md, "What each binary weighs"). Used for small values only
// (a server key, a callback's result); the daemon decodes a spoken answer's
// audio with Data(base64Encoded:).

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

    /// The bytes of base64 text in `alphabet`; nil for any other character, a bad length, or
    /// padding where there should be none (or, when `padded`, none where there should be).
    public static func decode(_ text: some StringProtocol, urlSafe: Bool = false, padded: Bool = true) -> [UInt8]? {
        let alphabet = urlSafe ? url : standard
        var body = Array(text.utf8)
        if padded {
            guard body.count % 4 == 0 else { return nil }
            let pads = body.reversed().prefix(while: { $0 == UInt8(ascii: "=") }).count
            guard pads <= 2 else { return nil }
            body.removeLast(pads)
        }
        guard body.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(body.count * 3 / 4)
        var chunk: UInt32 = 0
        for (n, byte) in body.enumerated() {
            guard let value = alphabet.firstIndex(of: byte) else { return nil }
            chunk = chunk << 6 | UInt32(value)
            if n % 4 == 3 {
                out += [UInt8(chunk >> 16 & 0xFF), UInt8(chunk >> 8 & 0xFF), UInt8(chunk & 0xFF)]
                chunk = 0
            }
        }
        switch body.count % 4 {
        case 2: out.append(UInt8(chunk >> 4 & 0xFF))
        case 3: out += [UInt8(chunk >> 10 & 0xFF), UInt8(chunk >> 2 & 0xFF)]
        default: break
        }
        return out
    }
}
