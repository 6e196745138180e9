// Finds the token, in INTERFACE.md's order: systemd's credential, then the
// state folder, then PARLOUR_TOKEN. It is read afresh for every request, so
// `parlourctl token set` or a new pairing takes effect without a restart. The
// token is handed only to the Link, which sends it only to the server in use.
import Foundation
import SatelliteCore

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
    public func read() -> String? { find()?.token }

    /// Where the token in force comes from (for doctor), or nil when there is none.
    public func source() -> TokenSource? { find()?.source }

    private func find() -> (token: String, source: TokenSource)? {
        let files = [credentialsFile.map { ($0, "the systemd credential") }, (stateFile, "the state folder")].compactMap { $0 }
        for (path, origin) in files {
            if let data = FileManager.default.contents(atPath: path),
               let token = TokenStore.clean(String(decoding: data, as: UTF8.self)) {
                return (token, .file(path: path, origin: origin))
            }
        }
        return environmentToken.flatMap(TokenStore.clean).map { ($0, .environment(name: "PARLOUR_TOKEN")) }
    }

    /// The token alone: a trailing newline (or any surrounding white space) is not part of it.
    static func clean(_ text: String) -> String? {
        let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return token.isEmpty ? nil : token
    }
}
