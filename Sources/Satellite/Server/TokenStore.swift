// Finds a token in one of its places (INTERFACE.md): systemd's credential, the
// state folder, PARLOUR_TOKEN. A server gets only the token of the place its
// pin names (pin.json's `tokenSource`), never the first that happens to hold
// one: that is how a server and its token stay together. The first place that
// holds a token is what a configured server and the Bonjour search start with.
// A token is read afresh for every request, so `parlourctl token set` or a new
// pairing takes effect without a restart, and is checked against RFC 6750's
// character set first: one that is not a bearer token is an error naming its
// place, and is sent nowhere. The token is handed only to the Link.
import SatelliteCore

/// Where the token is read from.
public struct TokenStore: Sendable {
    /// In INTERFACE.md's order, named once in SatellitePaths.
    private let candidates: [TokenSource]
    private let environment: [String: String]

    public init(stateDirectory: String, environment: [String: String]) {
        candidates = SatellitePaths.tokenCandidates(stateDirectory: stateDirectory, environment: environment)
        self.environment = environment
    }

    /// The first place that holds a token, or nil when none does.
    public func inForce() -> TokenSource? {
        candidates.first { text(at: $0) != nil }
    }

    /// The place of `kind`; nil for the credential when systemd gave none.
    public func place(_ kind: TokenKind) -> TokenSource? {
        candidates.first { $0.kind == kind }
    }

    /// The token at the place of `kind`: nil when `kind` is nil (this server gets none) or the place
    /// holds none. Throws, naming the place, when what it holds is not a bearer token.
    public func read(_ kind: TokenKind?) throws(SatelliteError) -> String? {
        guard let kind, let source = place(kind), let token = text(at: source) else { return nil }
        if let problem = BearerToken.problem(token, source: source.description) {
            throw SatelliteError(.notPaired, problem + " Put the token alone in it, or run parlourctl token set.")
        }
        return token
    }

    private func text(at source: TokenSource) -> String? {
        let text: String?
        switch source {
        case .file(let path, _): text = (try? FileSystem.read(path)).map { String(decoding: $0, as: UTF8.self) }
        case .environment(let name): text = environment[name]
        }
        return text.flatMap(TokenStore.clean)
    }

    /// The token alone: a trailing newline (or any surrounding white space) is not part of it.
    static func clean(_ text: String) -> String? {
        let token = text.trimmed()
        return token.isEmpty ? nil : token
    }
}
