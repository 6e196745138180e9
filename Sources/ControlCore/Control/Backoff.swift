// Reconnecting to a server, reopening a microphone: every retry in the satellite
// waits by this one rule, 1 s doubling up to a cap, so none can spin.

/// A retry delay that starts at `first` and doubles up to `cap`.
public struct Backoff: Sendable, Equatable {
    public let first: Duration
    public let cap: Duration
    public private(set) var current: Duration

    public init(first: Duration = .seconds(1), cap: Duration) {
        self.first = first
        self.cap = max(cap, first)
        self.current = first
    }

    /// The delay to wait now; the next one is twice as long, up to the cap.
    public mutating func next() -> Duration {
        let now = current
        current = min(current * 2, cap)
        return now
    }

    /// After a success the next failure waits `first` again.
    public mutating func reset() { current = first }
}
