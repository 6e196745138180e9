// The one word `parlourctl status`, the journal and sd_notify all use for what
// the satellite is doing. Kept closed: anything a caller reads here is in INTERFACE.md.

/// What the satellite is doing now.
public enum SatelliteState: String, Sendable, CaseIterable, Equatable {
    case starting, idle, listening, thinking, speaking, muted, offline, unpaired
}

extension SatelliteState {
    /// A plain sentence for systemd's STATUS= ("Listening in the kitchen.").
    public func sentence(room: String) -> String {
        let inRoom = room.isEmpty ? "" : " in the \(room)"
        switch self {
        case .starting: return "Starting."
        case .idle: return "Ready\(inRoom)."
        case .listening: return "Listening\(inRoom)."
        case .thinking: return "Waiting for the house to answer."
        case .speaking: return "Speaking\(inRoom)."
        case .muted: return "Muted: the microphone is off."
        case .offline: return "Cannot reach the house's server; trying again."
        case .unpaired: return "No server yet: pair with parlourctl pair LINK."
        }
    }
}
