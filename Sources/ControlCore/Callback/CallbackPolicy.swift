// How hard the satellite tries to hand a result to a callback URL: a few
// attempts with back-off, short timeouts, and which answers are worth another
// try. Kept apart from the sending so the rules are tested without a network.

/// The delivery rules for callbacks (docs/callbacks.md).
public enum CallbackPolicy {
    /// Tries in all, the first included.
    public static let attempts = 4
    /// The wait before the second try; it doubles before each later one (1 s, 2 s, 4 s).
    public static let backoff = Backoff(first: .seconds(1), cap: .seconds(4))
    /// How long one try may wait for the connection, and for the whole answer.
    public static let connectTimeout = Duration.seconds(3)
    public static let totalTimeout = Duration.seconds(5)
    /// At shutdown, how long deliveries still under way are waited for before they are dropped.
    public static let shutdownGrace = Duration.seconds(3)

    /// What one try came to.
    public enum Verdict: Sendable, Equatable {
        /// A 2xx answer: done.
        case delivered
        /// No answer, or a 5xx: try again while tries are left.
        case retry
        /// Any other answer (a redirect, which is not followed, or a 4xx): trying again would not help.
        case refused
    }

    /// The verdict on an HTTP answer with `status`.
    public static func verdict(status: Int) -> Verdict {
        switch status {
        case 200...299: .delivered
        case 500...599: .retry
        default: .refused
        }
    }
}
