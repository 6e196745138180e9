// What a certificate check that failed says about the wall clock. A Raspberry
// Pi has no battery clock: it starts at 1970 or at a saved time and jumps when
// NTP syncs. Until then an https server checked by its certificate fails, and
// the fault is this machine's clock, not the server: the person must be told
// to set the clock, not to distrust the server. A server pinned by its key is
// not checked by date at all. The TLS glue (ClientConnection, and any other
// HTTP client that gets OpenSSL's verify result, as curl's
// CURLINFO_SSL_VERIFYRESULT) calls `classify` with that result.

public enum CertificateClock: Sendable, Equatable {
    /// The certificate was vouched for.
    case trusted
    /// The check failed because the clock is behind: the certificate is not valid yet by it,
    /// or the clock shows a date no set clock can (before 2024, or before this program was built).
    case clockWrong(now: WallTime)
    /// The check failed for another reason (OpenSSL's words for it).
    case untrusted(reason: String)

    /// OpenSSL's X509_V_OK, X509_V_ERR_CERT_NOT_YET_VALID and X509_V_ERR_CRL_NOT_YET_VALID
    /// (x509_vfy.h; the same in every OpenSSL).
    public static let verified = 0
    public static let certificateNotYetValid = 9
    public static let revocationListNotYetValid = 11

    /// `verifyResult`: SSL_get_verify_result's; `reason`: X509_verify_cert_error_string's for it.
    /// `built`: when this program was built, if known.
    public static func classify(verifyResult: Int, reason: String, now: WallTime, built: WallTime?) -> CertificateClock {
        if verifyResult == verified { return .trusted }
        if verifyResult == certificateNotYetValid || verifyResult == revocationListNotYetValid || !now.isSet(built: built) {
            return .clockWrong(now: now)
        }
        return .untrusted(reason: reason)
    }
}

extension WallTime {
    /// The earliest date a set clock can show.
    public static let earliest = WallTime(seconds: 1_704_067_200)  // 2024-01-01T00:00:00Z

    /// Whether this could be a set clock: not before 2024, nor more than a day before `built`
    /// (when this program was built, if known; a day for a file's time taken in another zone).
    public func isSet(built: WallTime?) -> Bool {
        self >= Self.earliest && (built.map { seconds >= $0.seconds - 86_400 } ?? true)
    }
}
