// The token's shape, checked wherever a token comes from (a pairing link,
// `parlourctl token set`, the state folder, systemd's credential, PARLOUR_TOKEN)
// before it is stored or sent. RFC 6750 §2.1's b64token is the only text an
// Authorization: Bearer header may carry, so nothing else can reach a header:
// no space, no CR or LF to start a header of its own. A refusal names where the
// token came from and what kind of character is wrong, never the token.

/// The bearer token's character set.
public enum BearerToken {
    /// Whether `token` is RFC 6750's `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
    public static func isValid(_ token: String) -> Bool {
        let bytes = Array(token.utf8)
        let body = bytes.prefix { $0 != UInt8(ascii: "=") }
        guard !body.isEmpty, body.allSatisfy(isTokenByte) else { return false }
        return bytes.dropFirst(body.count).allSatisfy { $0 == UInt8(ascii: "=") }
    }

    /// Nil when `token` may be sent; else a sentence naming `source` (such as "the pairing link")
    /// and what is wrong, which quotes no part of the token.
    public static func problem(_ token: String, source: String) -> String? {
        guard !isValid(token) else { return nil }
        let what: String
        if token.isEmpty {
            what = "it is empty"
        } else if token.contains(where: \.isNewline) {
            what = "it has a line break inside it"
        } else if token.contains(where: \.isWhitespace) {
            what = "it has a space inside it"
        } else if token.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            what = "it has a control character in it"
        } else if token.unicodeScalars.contains(where: { !$0.isASCII }) {
            what = "it has a character outside ASCII in it"
        } else if token.hasPrefix("=") {
            what = "it starts with ="
        } else {
            what = "it has a character other than letters, digits and - . _ ~ + / in it (= only at its end)"
        }
        return "The token from \(source) cannot be a bearer token (RFC 6750): \(what). Nothing was sent with it."
    }

    private static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"), UInt8(ascii: "/"): true
        default: false
        }
    }
}
