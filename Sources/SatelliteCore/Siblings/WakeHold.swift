// The room's audio while a satellite's siblings decide who answers the
// server's wake (`wake` `server`): from the wake the room is kept, not sent;
// once decided, a winner sends what was kept first and the room after it, so
// the server hears the question whole and in order, and a loser sends none
// of it (and nothing more, until the stream begins afresh). The decision
// comes within `arbitration.windowMs`; should it not, the room is let go once
// `boundSamples` are kept, so that nothing is lost and memory stays bounded.
// Pure: the stream's sink drives it on the audio thread, under its route's lock.

/// What goes up of the room from a wake to its decision.
public struct WakeHold: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        /// The room goes up as it is heard.
        case passing
        /// Since a wake, the room is kept until the decision.
        case holding([Int16])
        /// Another satellite answers: nothing of the room goes up any more.
        case dropping
    }

    /// The most kept before the room is let go undecided: the window and a margin.
    public let boundSamples: Int
    public private(set) var state = State.passing

    public init(boundSamples: Int) {
        self.boundSamples = max(0, boundSamples)
    }

    /// The bound for a window of `windowMs`: the window and half a second more, at 16 kHz.
    public init(windowMs: Int) {
        self.init(boundSamples: (max(0, windowMs) + 500) * 16)
    }

    /// The wake: from now on the room is kept. A second wake before the decision keeps what the first kept.
    public mutating func woke() {
        if case .passing = state { state = .holding([]) }
    }

    /// A period of the room: what goes up now, in order (nil: nothing).
    public mutating func heard(_ samples: [Int16]) -> [Int16]? {
        switch state {
        case .passing:
            return samples
        case .dropping:
            return nil
        case .holding(var kept):
            kept += samples
            guard kept.count > boundSamples else {
                state = .holding(kept)
                return nil
            }
            // Undecided for longer than any window: the room goes up rather than be lost.
            state = .passing
            return kept
        }
    }

    /// The decision: `won`, what was kept goes up first (nil when nothing was); lost, it is dropped.
    public mutating func decided(won: Bool) -> [Int16]? {
        guard won else {
            state = .dropping
            return nil
        }
        switch state {
        case .holding(let kept):
            state = .passing
            return kept.isEmpty ? nil : kept
        case .passing, .dropping:
            return nil
        }
    }
}
