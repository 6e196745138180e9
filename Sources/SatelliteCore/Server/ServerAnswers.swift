// What the Parlour server's HTTP answers mean, kept apart from the HTTP client so every
// status and every malformed body can be tested without a network. Easy to get
// wrong: the server's own refusal text must pass through unchanged, and no
// message may carry the token or a URL's query (parlour-protocol.md 1.2, 1.3).

/// `GET /health`. Older servers send only `ok`, `tools` and `cloud`.
public struct ServerHealthAnswer: Sendable, Equatable {
    public let ok: Bool
    public let tools: Int
    public let cloud: Bool
    /// Requests in flight across the house; nil from an older server.
    public let running: Int?
    /// Requests waiting across all lanes; nil from an older server.
    public let waiting: Int?

    public init(ok: Bool, tools: Int, cloud: Bool, running: Int? = nil, waiting: Int? = nil) {
        self.ok = ok
        self.tools = tools
        self.cloud = cloud
        self.running = running
        self.waiting = waiting
    }
}

/// `POST /ask`.
public struct AskAnswer: Sendable, Equatable {
    public let reply: String
    /// `local` or `cloud`, passed on as the server said it.
    public let via: String

    public init(reply: String, via: String) {
        self.reply = reply
        self.via = via
    }
}

/// `POST /voice`. Nothing heard, or a failure on the server, is a 200 with an
/// empty `reply` and no audio.
public struct VoiceAnswer: Sendable, Equatable {
    public let heard: String
    public let reply: String
    public let via: String
    /// The reply as a whole WAV file, decoded from the answer's base64.
    public let audio: [UInt8]?

    public init(heard: String, reply: String, via: String, audio: [UInt8]?) {
        self.heard = heard
        self.reply = reply
        self.via = via
        self.audio = audio
    }
}

/// How a request ended without an HTTP answer. The HTTP client sorts its
/// failures into these; `ServerAnswers.failure` says what each means to a person.
public enum TransferFailure: Sendable, Equatable {
    case couldNotConnect
    case couldNotResolve
    /// No connection within the connect timeout (name lookup included).
    case connectTimeout(seconds: Double)
    /// Connected, but the whole exchange took longer than the total timeout.
    case timeout(seconds: Double)
    /// The connection closed before the answer was complete.
    case closedMidAnswer
    case tooLarge(limit: Int)
    /// An answer that is not HTTP, or whose framing could be read two ways (say why in the detail).
    case malformed
    case cancelled
    /// The https server showed another public key than the one pinned; nothing was sent.
    case keyChanged(pinned: String)
    /// The https server's certificate is vouched for by no authority this machine trusts.
    case unverified
    /// The https server's certificate could not be checked because this machine's clock is wrong (`now`).
    case clockWrong(now: WallTime)
    case other
}

extension TransferFailure {
    public var isClockWrong: Bool {
        if case .clockWrong = self { return true }
        return false
    }
}

/// Turns the server's answers, and the ways a request can fail, into values or
/// into a `SatelliteError` a person can act on.
public enum ServerAnswers {
    /// The error for a status that is not 2xx; nil for a 2xx answer.
    /// - Parameter sentToken: whether the request carried a token, so a 401 can say
    ///   "refused" or "none set".
    /// - Parameters:
    ///   - location: a 3xx answer's Location header; `url` (what was asked) resolves a relative one.
    public static func refusal(status: Int, body: [UInt8], route: ServerRoute, sentToken: Bool,
                               location: String? = nil, url: String = "") -> SatelliteError? {
        if (200..<300).contains(status) { return nil }
        if status == 401 {
            return sentToken
                ? SatelliteError(.tokenRefused, "The server refused the token. Pair again with parlourctl pair LINK, or set it with parlourctl token set.")
                : SatelliteError(.notPaired, "The server asks for a token and none is set. Pair with parlourctl pair LINK, or set it with parlourctl token set.")
        }
        if (300..<400).contains(status) {
            return Redirect.refusal(status: status, location: location, base: url, route: route.rawValue)
        }
        if let words = try? JSONValue.parse(body)["error"]?.stringValue, !words.isEmpty {
            return SatelliteError(.serverRefused, words)
        }
        return SatelliteError(.serverRefused, "The server answered \(route.rawValue) with status \(status) and gave no reason.")
    }

    public static func health(_ body: [UInt8]) throws(SatelliteError) -> ServerHealthAnswer {
        let answer = try AnswerReader(body: body, route: .health)
        return ServerHealthAnswer(
            ok: try answer.bool("ok"), tools: try answer.int("tools"), cloud: try answer.bool("cloud"),
            running: try answer.optionalInt("running"), waiting: try answer.optionalInt("waiting"))
    }

    /// `GET /v1/models` carries nothing the satellite uses; a list proves the token works.
    public static func models(_ body: [UInt8]) throws(SatelliteError) {
        let answer = try AnswerReader(body: body, route: .models)
        guard answer.fields["data"]?.arrayValue != nil else { throw answer.wrong("has no data list") }
    }

    public static func ask(_ body: [UInt8]) throws(SatelliteError) -> AskAnswer {
        let answer = try AnswerReader(body: body, route: .ask)
        return AskAnswer(reply: try answer.string("reply"), via: try answer.string("via"))
    }

    public static func voice(_ body: [UInt8]) throws(SatelliteError) -> VoiceAnswer {
        let answer = try AnswerReader(body: body, route: .voice)
        var audio: [UInt8]?
        switch answer.fields["audio"] {
        case nil, .null?:
            audio = nil
        case .string(let text)?:
            guard let decoded = Base64.decode(text) else { throw answer.wrong("has audio that is not valid base64") }
            audio = decoded
        default:
            throw answer.wrong("has audio that is neither base64 text nor null")
        }
        return VoiceAnswer(heard: try answer.string("heard"), reply: try answer.string("reply"), via: try answer.string("via"), audio: audio)
    }

    /// The error for a request that got no complete answer.
    /// - Parameters:
    ///   - url: the address as `displayURL` gives it, never with its query.
    ///   - detail: the HTTP client's own text, used only when nothing better can be said.
    public static func failure(_ kind: TransferFailure, route: ServerRoute, url: String, detail: String) -> SatelliteError {
        switch kind {
        case .couldNotConnect:
            return SatelliteError(.serverUnreachable, "Could not connect to the server at \(url): nothing accepted the connection. Check that Parlour is running there and that the address is right.")
        case .couldNotResolve:
            return SatelliteError(.serverUnreachable, "Could not find the server's host name in \(url). Check the address, or forget it with parlourctl unpin so the satellite looks again.")
        case .connectTimeout(let seconds):
            return SatelliteError(.serverUnreachable, "Could not connect to the server at \(url) within \(format(seconds)) s. Check that the machine is on and reachable from here.")
        case .timeout(let seconds):
            return SatelliteError(.timeout, "The server did not answer \(route.rawValue) within \(format(seconds)) s. It may be busy; try again.")
        case .closedMidAnswer:
            return SatelliteError(.badAnswer, "The server closed the connection in the middle of its answer to \(route.rawValue).")
        case .tooLarge(let limit):
            return SatelliteError(.badAnswer, "The server's answer to \(route.rawValue) is larger than \(size(limit)), more than the satellite accepts.")
        case .malformed:
            return SatelliteError(.badAnswer, "The server's answer to \(route.rawValue) could not be read: \(detail).")
        case .cancelled:
            // Whoever cancelled knows why, and reports its own CancelReason.
            return SatelliteError(.internalError, "The request to \(route.rawValue) was cancelled.")
        case .unverified:
            return SatelliteError(.serverRefused, "The certificate of \(url) is vouched for by no authority this machine trusts, and no key is pinned for it, so nothing was sent. Pair with it again (parlourctl pair LINK or parlourctl use URL) to see its key and trust it.")
        case .keyChanged(let pinned):
            return ServerKey.changed(url: url, shown: nil, pinned: pinned)
        case .clockWrong(let now):
            return clockWrong(url: url, now: now)
        case .other:
            return SatelliteError(.serverUnreachable, "The request to \(url) failed: \(detail).")
        }
    }

    /// How a certificate refused for this machine's clock begins (`clockWrong`): doctor's clock check looks for it.
    public static let clockWrongLead = "This satellite's clock is wrong"

    /// The certificate of the https server at `url` could not be checked by the clock, which says `now`.
    public static func clockWrong(url: String, now: WallTime) -> SatelliteError {
        SatelliteError(.serverRefused, "\(clockWrongLead): it says \(now.iso8601), and by that date the certificate of \(url) "
            + "cannot be checked (it is not valid yet), so nothing was sent. The server is not at fault. Set the clock: "
            + "\(clockFix); the satellite tries again by itself.")
    }

    /// What sets the clock.
    public static let clockFix = "sudo timedatectl set-ntp true, then wait until timedatectl status says System clock synchronized: yes"

    /// A URL fit for a message or a log: without its query, fragment or user info,
    /// which is where secrets travel. `ServerAddress.displayURL` (ControlCore) does it, for
    /// parlourctl too; this name stays for the HTTP code's callers.
    public static func displayURL(_ url: String) -> String { ServerAddress.displayURL(url) }

    private static func size(_ bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }

    /// Seconds as a person reads them: 5, not 5.0; 1.5 as it is.
    public static func format(_ seconds: Double) -> String {
        seconds.rounded() == seconds ? String(Int(seconds)) : String(seconds)
    }
}
