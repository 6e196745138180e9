// Where a request's result is sent when it ends (`--callback URL`), checked
// once here by both programs, and how the outcome is added to it. Easy to get
// wrong: the caller's own query must be kept as it came, the outcome's names
// must not collide with it, and a user name or password in the URL would be
// sent as an Authorization header by most HTTP clients, so it is refused: nothing that looks like
// a credential ever leaves with a callback.

/// An `http` or `https` URL to call with a request's outcome.
public struct CallbackURL: Sendable, Equatable, CustomStringConvertible {
    /// The URL as the caller gave it.
    public let text: String

    /// The query names the satellite adds; a callback URL may not already use them.
    public static let reservedNames: Set<String> = ["status", "response", "reason", "error"]

    private init(text: String) { self.text = text }

    /// Checks `text`; the failure is `invalid_request` with a sentence saying what is wrong.
    public static func parse(_ text: String) -> Result<CallbackURL, SatelliteError> {
        if let problem = problem(with: text) {
            let shown = text.isEmpty ? "URL" : "URL \(ServerAddress.displayURL(text))"
            return .failure(SatelliteError(.invalidRequest, "The callback \(shown) \(problem)."))
        }
        return .success(CallbackURL(text: text))
    }

    /// What is wrong with `text` as a callback URL, as a phrase that follows the URL; nil when nothing is.
    public static func problem(with text: String) -> String? {
        if text.isEmpty { return "is empty; give an http:// or https:// URL" }
        guard text.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) else {
            return "has spaces, control characters or letters outside ASCII; write them with %-escapes"
        }
        guard !ServerAddress.userInfo(in: text) else {
            return "has a user name or password in it, and the satellite sends no credentials with a callback; "
                + "put what the receiver needs in the query"
        }
        guard ServerAddress(text) != nil else {
            return "is not an http:// or https:// URL with a host (and a port from 1 to 65535, if any)"
        }
        if let taken = queryNames(of: text).first(where: reservedNames.contains) {
            return "already has \"\(taken)\" in its query, a name the satellite adds (status, response, reason, error); "
                + "choose another name for it"
        }
        return nil
    }

    /// The URL without its query, fragment, user name or password: what the journal shows.
    public var display: String { ServerAddress.displayURL(text) }

    public var description: String { display }

    /// The URL to request for `result`: the caller's URL without its fragment (HTTP never
    /// sends one), a `/` path when it has none, and the outcome after any query it has.
    public func url(reporting result: ControlResult) -> String {
        var base = text
        if let hash = base.firstIndex(of: "#") { base = String(base[..<hash]) }
        let afterScheme = base.range(ofText: "://")!.upperBound
        let authorityEnd = base[afterScheme...].firstIndex { $0 == "/" || $0 == "?" } ?? base.endIndex
        if authorityEnd == base.endIndex || base[authorityEnd] != "/" { base.insert("/", at: authorityEnd) }
        if !base.contains("?") {
            base += "?"
        } else if base.last != "?" && base.last != "&" {
            base += "&"
        }
        return base + CallbackURL.outcome(result)
    }

    /// `status=completed&response=...`, `status=cancelled&reason=...` or `status=error&error=...`.
    public static func outcome(_ result: ControlResult) -> String {
        switch result {
        case .completed(let response): "status=completed&response=" + Base64URL.encode(response.text.utf8)
        case .cancelled(let reason): "status=cancelled&reason=" + reason.rawValue
        case .error(let e): "status=error&error=" + e.code.rawValue
        }
    }

    /// The names in the URL's query, %-escapes undone.
    static func queryNames(of text: String) -> [String] {
        let beforeFragment = text.prefix { $0 != "#" }
        guard let question = beforeFragment.firstIndex(of: "?") else { return [] }
        let query = beforeFragment[beforeFragment.index(after: question)...]
        return query.split(separator: "&").map { pair in
            let name = String(pair.prefix { $0 != "=" })
            return PercentEscapes.decodedText(name) ?? name
        }
    }
}
