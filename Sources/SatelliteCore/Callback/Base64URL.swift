// base64url (RFC 4648 section 5) without padding: the alphabet of base64 with
// `-` and `_` for `+` and `/`, and no `=`, so a value survives inside a URL's
// query unchanged, with no percent-escaping. A callback's `response` is carried
// this way. Easy to get wrong: a length of 4n+1 characters is never valid.
import Foundation

/// base64url without `=` padding.
public enum Base64URL {
    /// The bytes as base64url, without padding.
    public static func encode(_ data: Data) -> String {
        var text = data.base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        return String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }

    /// The bytes of unpadded base64url text; nil when it is not that (`+`, `/`, `=`, or a bad length).
    public static func decode(_ text: String) -> Data? {
        guard text.utf8.allSatisfy(isAlphabet), text.utf8.count % 4 != 1 else { return nil }
        var standard = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        return Data(base64Encoded: standard)
    }

    private static func isAlphabet(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }
}
