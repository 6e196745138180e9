// A failed libavahi call, for the journal: the function and Avahi's error code,
// described in Avahi's own words, so a person can search for it.
import CAvahi

/// An error from libavahi-client or libavahi-common.
public struct AvahiError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The C function that failed, e.g. "avahi_client_new".
    public let function: String
    /// Avahi's error code (`AVAHI_ERR_*`, negative).
    public let code: Int32

    public init(function: String, code: Int32) {
        self.function = function
        self.code = code
    }

    public var description: String {
        let text = avahi_strerror(code).map { String(cString: $0) } ?? "unknown error"
        return "\(function) failed (\(code)): \(text)"
    }
}
