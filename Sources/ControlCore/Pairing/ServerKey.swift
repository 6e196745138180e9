// An https server trusted on first use: its public key, as pin.json's "key"
// ("sha256/<base64>", the SHA-256 of the DER SubjectPublicKeyInfo), and what
// pairing does with the key a server shows. A self-signed reverse proxy is how
// Parlour's docs suggest reaching the house over TLS, so "no authority vouches
// for it" is normal; a key other than the one pinned never is. Easy to get
// wrong: a key the person confirmed must be the key pinned, and the HTTP
// and /listen connections compare the key shown with it (ClientConnection).

/// The pinned public key of an https server.
public enum ServerKey {
    /// `sha256/<base64>` of a 32-byte digest.
    public static func text(digest: [UInt8]) -> String { "sha256/" + Base64.encode(digest) }

    /// Whether `text` is `sha256/` and the base64 of 32 bytes.
    public static func isValid(_ text: String) -> Bool {
        guard text.hasPrefix("sha256/"), let digest = Base64.decode(text.dropFirst("sha256/".count)) else {
            return false
        }
        return digest.count == 32
    }

    /// What pairing (or `use`) does with the key an https server shows.
    public enum Decision: Sendable, Equatable {
        /// Pin it: an authority vouches for the certificate, or the person confirmed this very key.
        case pin(String)
        /// Ask the person first: nobody vouches for it, and nobody confirmed it.
        case ask(String)
        /// The person confirmed another key than the one shown now: nothing is sent.
        case changed(shown: String, confirmed: String)
    }

    public static func decide(shown: String, verified: Bool, confirmed: String?) -> Decision {
        if let confirmed, confirmed != shown { return .changed(shown: shown, confirmed: confirmed) }
        if confirmed != nil || verified { return .pin(shown) }
        return .ask(shown)
    }

    /// The question for a key nobody vouches for.
    public static func unconfirmed(_ key: String, url: String) -> SatelliteError {
        SatelliteError(.serverKeyUnconfirmed,
            "No authority vouches for the certificate of \(url). The SHA-256 of its public key is \(key). "
                + "If that is your server's key (on the server: openssl x509 -in CERT -pubkey -noout | openssl pkey -pubin "
                + "-outform der | openssl dgst -sha256 -binary | base64), confirm it, or run the command again with --yes; "
                + "nothing was sent.", serverKey: key)
    }

    /// A server that shows another key than the one pinned or confirmed: nothing was sent to it.
    public static func changed(url: String, shown: String?, pinned: String) -> SatelliteError {
        let now = shown.map { " It now shows \($0)," } ?? " It now shows another,"
        return SatelliteError(.serverKeyChanged,
            "The server at \(url) was pinned with the key \(pinned).\(now) so nothing was sent to it. If its certificate "
                + "really changed, pair again (parlourctl pair LINK, or parlourctl use URL) and confirm the new key.")
    }
}
