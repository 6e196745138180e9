// When the satellite's own ear is open, and whether a model's "heard it" is a
// wake. It listens only when nothing else has the room: idle, offline or
// unpaired (a wake then still gets its spoken or sounded error), never while a
// turn listens, thinks or speaks (so an answer cannot wake it) and never
// muted. A wake starts one turn; until that turn has ended, and for
// `refractoryMs` after the wake, the word is not taken again. With `bargeIn`
// (the echo cancelled out of the microphone) it listens while an answer plays
// too, its own turn's or not: the word said over it starts a new turn.

/// The wake word's policy; the service carries out what it decides.
public struct WakeWordGate: Sendable, Equatable {
    public let refractoryMs: Int
    /// It hears the room while an answer plays (`audio.echoCancel`).
    public let bargeIn: Bool
    public private(set) var state: SatelliteState = .starting
    /// Wakes' turns started and not yet ended (one superseded over its answer ends after the next began).
    private var turns = 0
    private var lastWakeMs: Int64?

    public init(refractoryMs: Int, bargeIn: Bool = false) {
        self.refractoryMs = refractoryMs
        self.bargeIn = bargeIn
    }

    /// A wake's turn has been started and has not yet ended.
    public var turnUnderWay: Bool { turns > 0 }

    /// Whether the detector should hear the room now (the microphone open for it).
    public var listens: Bool {
        if bargeIn, state == .speaking { return true }
        guard !turnUnderWay else { return false }
        switch state {
        case .idle, .offline, .unpaired: return true
        case .starting, .listening, .thinking, .speaking, .muted: return false
        }
    }

    /// The satellite's state moved.
    public mutating func stateChanged(_ state: SatelliteState) { self.state = state }

    /// The model heard its word at `nowMs` (a monotonic clock): true when that is a wake, which
    /// starts a turn.
    public mutating func heard(atMs nowMs: Int64) -> Bool {
        guard listens else { return false }
        if let last = lastWakeMs, nowMs - last < Int64(refractoryMs) { return false }
        lastWakeMs = nowMs
        turns += 1
        return true
    }

    /// A wake's turn has its result.
    public mutating func turnEnded() { turns = max(0, turns - 1) }
}
