// Where the config, the state folder, the control socket and the token are,
// after the command line, systemd and the environment have had their say.
// The order of overrides is part of the interface (INTERFACE.md, "Programs
// and files"); both programs resolve it here so they cannot disagree.

/// The files the satellite uses, resolved once at start.
public struct SatellitePaths: Sendable, Equatable {
    public var config: String
    /// True when the config path was named (`--config` or `PARLOUR_SATELLITE_CONFIG`): then a missing file is an error.
    public var configExplicit: Bool
    public var stateDirectory: String
    public var socket: String

    public init(config: String, configExplicit: Bool, stateDirectory: String, socket: String) {
        self.config = config
        self.configExplicit = configExplicit
        self.stateDirectory = stateDirectory
        self.socket = socket
    }

    public static let defaultConfig = "/etc/parlour-satellite/satellite.json"
    public static let defaultStateDirectory = "/var/lib/parlour-satellite"
    public static let defaultSocket = "/run/parlour-satellite/control.sock"

    /// Applies the overrides in their documented order. `options` holds the command-line values
    /// under `config`, `state-dir` and `socket`. Empty values count as not given, so
    /// `PARLOUR_SATELLITE_CONFIG=` does not point at a file named "".
    public static func resolve(options: [String: String], environment: [String: String]) -> SatellitePaths {
        func given(_ value: String?) -> String? { value?.isEmpty == false ? value : nil }
        // systemd passes several directories colon-separated when the unit names several.
        func firstOfList(_ value: String?) -> String? {
            given(value?.split(separator: ":", omittingEmptySubsequences: true).first.map(String.init))
        }

        let explicitConfig = given(options["config"]) ?? given(environment["PARLOUR_SATELLITE_CONFIG"])
        let state = given(options["state-dir"]) ?? firstOfList(environment["STATE_DIRECTORY"])
            ?? given(environment["PARLOUR_SATELLITE_STATE"]) ?? defaultStateDirectory
        let socket = given(options["socket"]) ?? given(environment["PARLOUR_SATELLITE_SOCKET"])
            ?? firstOfList(environment["RUNTIME_DIRECTORY"]).map { joined($0, "control.sock") } ?? defaultSocket
        return SatellitePaths(config: explicitConfig ?? defaultConfig, configExplicit: explicitConfig != nil,
                              stateDirectory: state, socket: socket)
    }

    /// Where the token may be, in INTERFACE.md's order: for a configured server the first that holds a
    /// token wins; any other pin names its own (pin.json's `tokenSource`). A file of white space alone
    /// holds none: under the unit the credential file always exists, as a lone newline when
    /// /etc/parlour-satellite/token is absent (systemd 252 needs that default; docs/service.md).
    public static func tokenCandidates(stateDirectory: String, environment: [String: String]) -> [TokenSource] {
        var sources: [TokenSource] = []
        if let credentials = environment["CREDENTIALS_DIRECTORY"], !credentials.isEmpty {
            sources.append(.file(path: joined(credentials, "token"), kind: .credential))
        }
        sources.append(.file(path: joined(stateDirectory, "token"), kind: .state))
        sources.append(.environment(name: "PARLOUR_TOKEN"))
        return sources
    }

    /// Where the pinned server is kept.
    public var pinFile: String { SatellitePaths.joined(stateDirectory, "pin.json") }
    /// Where the token is written by pairing and `parlourctl token set`.
    public var tokenFile: String { SatellitePaths.joined(stateDirectory, "token") }

    /// `name` inside `directory`.
    public static func joined(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// The folder a path is in: "" for a bare name, "/" for one at the root.
    public static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

/// Which of the token's places a pin's token comes from, as pin.json's `tokenSource` names it.
public enum TokenKind: String, Sendable, Equatable, CaseIterable {
    /// systemd's credential, `$CREDENTIALS_DIRECTORY/token`.
    case credential
    /// `<state>/token`, written by pairing and `parlourctl token set`.
    case state
    /// `PARLOUR_TOKEN`.
    case environment

    /// For people: "the systemd credential", "the state folder", "PARLOUR_TOKEN".
    public var origin: String {
        switch self {
        case .credential: "the systemd credential"
        case .state: "the state folder"
        case .environment: "PARLOUR_TOKEN"
        }
    }
}

/// A place the token may come from. Reading it is the token store's job; this only names it.
public enum TokenSource: Sendable, Equatable, CustomStringConvertible {
    /// A file holding the token alone.
    case file(path: String, kind: TokenKind)
    /// An environment variable holding the token.
    case environment(name: String)

    public var kind: TokenKind {
        switch self {
        case .file(_, let kind): kind
        case .environment: .environment
        }
    }

    public var description: String {
        switch self {
        case .file(let path, let kind): "\(path) (\(kind.origin))"
        case .environment(let name): "$\(name)"
        }
    }
}
