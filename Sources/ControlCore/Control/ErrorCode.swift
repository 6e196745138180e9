// The closed set of errors a request can end with (INTERFACE.md, "Results").
// Callers switch on these words, so a new one is added here and in docs/parlourctl.md.

/// Why a request failed, as a caller switches on it.
public enum ErrorCode: String, Sendable, CaseIterable, Equatable {
    case invalidRequest = "invalid_request"
    case unsupportedVersion = "unsupported_version"
    case unknownCommand = "unknown_command"
    case notPaired = "not_paired"
    case noServer = "no_server"
    case serverUnreachable = "server_unreachable"
    case tokenRefused = "token_refused"
    case serverRefused = "server_refused"
    case badAnswer = "bad_answer"
    case microphoneUnavailable = "microphone_unavailable"
    case speakerUnavailable = "speaker_unavailable"
    case muted = "muted"
    case timeout = "timeout"
    case invalidLink = "invalid_link"
    case permissionDenied = "permission_denied"
    case daemonUnavailable = "daemon_unavailable"
    case internalError = "internal_error"
    /// An https server shows another key than the one pinned (or confirmed): nothing was sent.
    case serverKeyChanged = "server_key_changed"
    /// An https server's certificate is vouched for by nobody, and its key awaits a person's yes.
    case serverKeyUnconfirmed = "server_key_unconfirmed"
}

/// An error a person can act on: a code for programs and a sentence for people.
public struct SatelliteError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: ErrorCode
    public let message: String
    /// Who spoke to the room about it: `"satellite"` when the satellite said a notice of its
    /// own (the house could not be reached); nil when nothing was said (INTERFACE.md, "Results").
    public let via: String?
    /// With `server_key_unconfirmed`: the key shown, for the person to confirm (`sha256/<base64>`).
    public let serverKey: String?

    public init(_ code: ErrorCode, _ message: String, via: String? = nil, serverKey: String? = nil) {
        self.code = code
        self.message = message
        self.via = via
        self.serverKey = serverKey
    }

    public var description: String { message }
}

/// Why a request ended without finishing (INTERFACE.md, "Results").
public enum CancelReason: String, Sendable, CaseIterable, Equatable {
    case nothingHeard = "nothing_heard"
    case cancelledByUser = "cancelled_by_user"
    case superseded = "superseded"
    case shuttingDown = "shutting_down"

    public var sentence: String {
        switch self {
        case .nothingHeard: "Nothing was heard."
        case .cancelledByUser: "Cancelled."
        case .superseded: "A newer request took over."
        case .shuttingDown: "The satellite is shutting down."
        }
    }
}

extension SatelliteError {
    /// What `listen` gets while the microphone is muted.
    public static let microphoneMuted = SatelliteError(.muted,
        "The microphone is muted, so nothing can be heard. Unmute it with parlourctl unmute, then listen again.")
    /// What a `listen` under way gets when the microphone is muted in the middle of it.
    public static let mutedWhileListening = SatelliteError(.muted,
        "The microphone was muted while listening; what it had heard was dropped and nothing was sent.")
}
