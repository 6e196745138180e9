// What the state hook is told about one state change: the environment it runs
// with and the JSON on its standard input. Easy to get wrong: the hook inherits
// the daemon's environment, which may hold the token (PARLOUR_TOKEN) or point at
// it (CREDENTIALS_DIRECTORY); both are removed here, with systemd's per-process
// variables that belong to the daemon alone.

/// One state change, as a state hook receives it.
public struct StateChange: Sendable, Equatable {
    public var state: SatelliteState
    public var previous: SatelliteState
    public var room: String
    /// The server in use's name, when one is known.
    public var serverName: String?
    public var at: WallTime

    public init(state: SatelliteState, previous: SatelliteState, room: String, serverName: String?, at: WallTime) {
        self.state = state
        self.previous = previous
        self.room = room
        self.serverName = serverName
        self.at = at
    }

    /// Never passed on to a hook: the token and where it is, and systemd's handshakes with the daemon itself.
    public static let withheld: Set<String> = [
        "PARLOUR_TOKEN", "CREDENTIALS_DIRECTORY",
        "NOTIFY_SOCKET", "WATCHDOG_PID", "WATCHDOG_USEC", "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES",
    ]

    /// The hook's environment: the daemon's own without `withheld`, PATH (a default when the
    /// daemon has none), the control socket so the hook can call parlourctl, and the change itself.
    public func environment(inheriting daemon: [String: String], socket: String) -> [String: String] {
        var environment = daemon.filter { !Self.withheld.contains($0.key) }
        if environment["PATH"]?.isEmpty ?? true { environment["PATH"] = HookCommand.defaultSearchPath }
        environment["PARLOUR_SATELLITE_SOCKET"] = socket
        environment["PARLOUR_STATE"] = state.rawValue
        environment["PARLOUR_PREVIOUS_STATE"] = previous.rawValue
        environment["PARLOUR_ROOM"] = room
        environment["PARLOUR_SERVER_NAME"] = serverName ?? ""
        return environment
    }

    /// The event on the hook's standard input: the `state` event as `parlourctl watch --json`
    /// prints it, with the room, the server's name and the time.
    public var json: JSONValue {
        guard case .object(var fields) = SatelliteEvent.state(state, previous: previous).json else { return .null }
        fields["v"] = .number(Double(ControlProtocol.version))
        fields["room"] = .string(room)
        fields["serverName"] = .from(serverName)
        fields["at"] = .string(at.iso8601)
        return .object(fields)
    }
}
