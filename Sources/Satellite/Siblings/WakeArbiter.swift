// The seam between a wake and the siblings' decision: the wake paths (the
// local wake word, the server's wake on the stream) ask, the Arbiter answers
// (it sends the claim, waits for the siblings', publishes the decision).
import SatelliteCore

/// Decides whether this satellite answers a wake.
public protocol WakeArbiter: Sendable {
    /// Whether this satellite answers a wake heard at `levelDb` (dBFS after processing) with the
    /// detector's `probability`, at `wakeNs` (CLOCK_MONOTONIC). Returns at once, won, with no
    /// sibling known; after at most `arbitration.windowMs` otherwise. nil when arbitration is off
    /// (answer, as a lone satellite).
    func arbitrate(levelDb: Double, probability: Double, wakeNs: UInt64) async -> ArbitrationDecision?
}
