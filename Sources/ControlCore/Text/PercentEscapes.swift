// "%XX" escapes undone: one decoder for the pairing link's query, a callback
// URL's query names and a URL's host (URLParts, and ServerAddress, which must
// read a server's host as the connections do).

public enum PercentEscapes {
    /// The bytes with each `%XX` made the byte it names and everything else, `+` included, as it is;
    /// nil when a `%` is not followed by two hex digits.
    public static func decoded(_ text: some Collection<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var rest = text[...]
        while let byte = rest.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                out.append(byte)
                continue
            }
            guard let high = rest.popFirst().flatMap(hexValue), let low = rest.popFirst().flatMap(hexValue) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }

    /// `decoded` as text: nil also when the bytes are not UTF-8.
    public static func decodedText(_ text: some StringProtocol) -> String? {
        decoded(text.utf8).flatMap { String(validating: $0, as: UTF8.self) }
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
