// Whether the echo canceller runs now: while the speaker plays, and for a tail
// after it that covers the echo still in the room and in the canceller's
// filter. Without it WebRTC's canceller ran every 10 ms with nothing playing,
// which was most of what the processing cost idle (BENCHMARKS.md, "A room with
// an echo"). Easy to get wrong: the tail must outlast the filter, so that what
// the canceller last saw of the speaker was silence and it resumes, at the next
// answer, where the room left it.

/// Counts down the tail after the speaker's last sound, in samples.
public struct EchoTail: Sendable {
    /// How long after the last sound played the canceller still runs (samples).
    public let length: Int
    private var left = 0

    public init(length: Int) {
        self.length = length
    }

    /// Whether a block of `count` samples, whose reference `playing` or not, is to be cancelled.
    public mutating func active(playing: Bool, count: Int) -> Bool {
        if playing {
            left = length
            return true
        }
        guard left > 0 else { return false }
        left = max(0, left - count)
        return true
    }

    /// Whether the tail ran out: nothing has played for `length`.
    public var idle: Bool { left == 0 }
}
