// Reads the link `parlour pair` prints on the server:
// parlour://pair?url=http%3A%2F%2Fden.local%3A8765&token=...&name=...
// It carries the address and the token at once, so the two cannot come from
// different servers. Easy to get wrong: values are encodeURIComponent text, so
// a `+` is a plus and never a space; and no refusal may quote the token or
// the URL (it may hold a password).

/// A pairing link: the server, the token that opens it, and what it calls itself.
public struct PairingLink: Sendable, Equatable {
    /// The server's http or https URL, as the link gave it (trimmed).
    public let url: String
    public let token: String
    /// The server's name, or the URL's host when the link has none.
    public let name: String

    public init(url: String, token: String, name: String) {
        self.url = url
        self.token = token
        self.name = name
    }

    /// Reads a pasted link (white space around it is fine). A refusal is `invalid_link` with a
    /// sentence saying what is wrong and what to do; it never contains the token.
    public static func parse(_ text: String) -> Result<PairingLink, SatelliteError> {
        do {
            return .success(try read(text))
        } catch {
            return .failure(SatelliteError(.invalidLink, error.sentence))
        }
    }

    private static func read(_ text: String) throws(Refusal) -> PairingLink {
        let link = text.trimmed()
        guard !link.isEmpty, let separator = link.range(ofText: "://") else { throw .notALink }
        guard !link.contains(where: { $0.isWhitespace || $0.isNewline }) else { throw .whiteSpaceInside }
        guard link[..<separator.lowerBound].lowercased() == "parlour" else { throw .otherScheme }

        let rest = link[separator.upperBound...]
        let beforeFragment = rest.prefix { $0 != "#" }
        let authorityAndPath = beforeFragment.prefix { $0 != "?" }
        let query = beforeFragment.dropFirst(authorityAndPath.count + 1)
        let authority = authorityAndPath.prefix { $0 != "/" }
        let path = authorityAndPath.dropFirst(authority.count)
        guard authority.lowercased() == "pair", path.isEmpty || path == "/" else { throw .otherHost }

        let values = try fields(of: query)
        guard let url = values["url"] else { throw .noURL }
        guard !ServerAddress.userInfo(in: url) else { throw .userInURL }
        guard let address = ServerAddress(url) else { throw .notWebAddress }
        guard let token = values["token"] else { throw .noToken }
        guard BearerToken.isValid(token) else { throw .badToken(BearerToken.problem(token, source: "the pairing link")!) }
        return PairingLink(url: url, token: token, name: values["name"] ?? address.host)
    }

    /// The link's url, token and name, percent-decoded and trimmed. An empty value is left
    /// out, as if missing; the first of a repeated key wins, as on the phone.
    private static func fields(of query: Substring) throws(Refusal) -> [String: String] {
        var values: [String: String] = [:]
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: "=") ?? pair.endIndex
            guard let key = PercentEscapes.decodedText(pair[..<equals]) else { throw .badEncoding(nil) }
            guard ["url", "token", "name"].contains(key), values[key] == nil else { continue }
            let raw = equals == pair.endIndex ? "" : pair[pair.index(after: equals)...]
            guard let value = PercentEscapes.decodedText(raw) else { throw .badEncoding(key) }
            let trimmed = value.trimmed()
            if !trimmed.isEmpty { values[key] = trimmed }
        }
        return values
    }

    /// Why a link was refused. The sentences name the part at fault, never its value.
    enum Refusal: Error, Equatable {
        case notALink, whiteSpaceInside, otherScheme, otherHost, badEncoding(String?), noURL, notWebAddress, userInURL, noToken, badToken(String)

        private static let fix = "Copy the whole link that `parlour pair` prints on the server."

        var sentence: String {
            switch self {
            case .notALink:
                "This is not a pairing link: it should start with parlour://pair?. \(Refusal.fix)"
            case .whiteSpaceInside:
                "The link has a space or line break inside it, so part of it may be missing. Copy it again in one piece."
            case .otherScheme:
                "This link is not a Parlour pairing link: it should start with parlour://pair?. \(Refusal.fix)"
            case .otherHost:
                "This parlour:// link is not for pairing: it should start with parlour://pair?. \(Refusal.fix)"
            case .badEncoding(let key):
                "The link\(key.map { "'s \($0)" } ?? "") is not correctly percent-encoded "
                    + "(a % must be followed by two hex digits). \(Refusal.fix)"
            case .noURL:
                "The link has no server address (url=); it may have been cut short. \(Refusal.fix)"
            case .notWebAddress:
                "The link's server address (url=) is not an http or https address with a host. \(Refusal.fix)"
            case .userInURL:
                "The link's server address (url=) has a user name or password in it, which the satellite never sends. "
                    + "This is not a link `parlour pair` makes: \(Refusal.fix)"
            case .badToken(let problem):
                "\(problem) \(Refusal.fix)"
            case .noToken:
                "The link has no token (token=); it may have been cut short. \(Refusal.fix)"
            }
        }
    }
}
