// base64url (RFC 4648 section 5) without padding: the alphabet of base64 with
// `-` and `_` for `+` and `/`, and no `=`, so a value survives inside a URL's
// query unchanged, with no percent-escaping. A callback's `response` is carried
// this way. Easy to get wrong: a length of 4n+1 characters is never valid.

/// base64url without `=` padding.
public enum Base64URL {
    /// The bytes as base64url, without padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String { Base64.encode(bytes, urlSafe: true, padded: false) }

    /// The bytes of unpadded base64url text; nil when it is not that (`+`, `/`, `=`, or a bad length).
    public static func decode(_ text: String) -> [UInt8]? { Base64.decode(text, urlSafe: true, padded: false) }
}
