// The satellite's state is derived, never set: from what a turn is doing, whether
// a question is out, whether it is muted and whether the server answers. Deriving
// it in one place means no code path can forget to put it back to idle.

/// What a turn (listen, answer, play) is doing.
public enum TurnPhase: String, Sendable, Equatable {
    case listening, thinking, speaking
}

/// The facts the state is derived from.
public struct StateInputs: Sendable, Equatable {
    public var started = false
    public var phase: TurnPhase?
    public var asking = 0
    /// Notices the satellite is saying itself outside a turn (an `ask` the house did not answer).
    public var notices = 0
    public var muted = false
    /// Whether there is a server to talk to at all.
    public var hasServer = false
    /// nil until the first check.
    public var reachable: Bool?
    /// With the stream transport: whether the /listen socket is open; nil when it is not used.
    public var streamConnected: Bool?

    public init() {}

    public var state: SatelliteState {
        guard started else { return .starting }
        switch phase {
        case .listening?: return .listening
        case .thinking?: return .thinking
        case .speaking?: return .speaking
        case nil: break
        }
        if notices > 0 { return .speaking }
        if asking > 0 { return .thinking }
        if muted { return .muted }
        if !hasServer { return .unpaired }
        if reachable == false || streamConnected == false { return .offline }
        return .idle
    }
}
