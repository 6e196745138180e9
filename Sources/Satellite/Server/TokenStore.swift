// Finds the token, in INTERFACE.md's order: systemd's credential, then the
// state folder, then PARLOUR_TOKEN. It is read afresh for every request, so
// `parlourctl token set` or a new pairing takes effect without a restart. The
// token is handed only to the Link, which sends it only to the server in use.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
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

    /// The token in force, or nil when there is none.
    public func read() -> String? { find()?.token }

    /// Where the token in force comes from (for doctor), or nil when there is none.
    public func source() -> TokenSource? { find()?.source }

    private func find() -> (token: String, source: TokenSource)? {
        for source in candidates {
            let text: String?
            switch source {
            case .file(let path, _): text = FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
            case .environment(let name): text = environment[name]
            }
            if let token = text.flatMap(TokenStore.clean) { return (token, source) }
        }
        return nil
    }

    /// The token alone: a trailing newline (or any surrounding white space) is not part of it.
    static func clean(_ text: String) -> String? {
        let token = text.trimmed()
        return token.isEmpty ? nil : token
    }
}
