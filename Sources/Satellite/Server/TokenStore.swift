// Finds the token, in INTERFACE.md's order: systemd's credential, then the
// state folder, then PARLOUR_TOKEN. It is read afresh for every request, so
// `parlourctl token set` or a new pairing takes effect without a restart. The
// token is handed only to the Link, which sends it only to the server in use.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where the token is read from.
public struct TokenStore: Sendable {
    public let credentialsFile: String?
    public let stateFile: String
    public let environmentToken: String?

    public init(stateDirectory: String, environment: [String: String]) {
        credentialsFile = environment["CREDENTIALS_DIRECTORY"].map { $0 + "/token" }
        stateFile = stateDirectory + "/token"
        environmentToken = environment["PARLOUR_TOKEN"]
    }

    /// The token in force, or nil when there is none.
    public func read() -> String? {
        for path in [credentialsFile, stateFile].compactMap({ $0 }) {
            if let data = FileManager.default.contents(atPath: path),
               let token = TokenStore.clean(String(decoding: data, as: UTF8.self)) {
                return token
            }
        }
        return environmentToken.flatMap(TokenStore.clean)
    }

    /// The token alone: a trailing newline (or any surrounding white space) is not part of it.
    static func clean(_ text: String) -> String? {
        let token = text.trimmed()
        return token.isEmpty ? nil : token
    }
}
