// When to try the /listen socket again after it ended. Parlour's own satellite
// reconnects at once after a clean close and backs off (1 s doubling to
// retryMs) after errors; easy to get wrong: a server that closes cleanly right
// after every `ready` would be hammered in a tight loop, so only the first of
// such quick clean closes in a row reconnects at once.

/// The reconnect delay of the /listen stream.
public struct ReconnectPolicy: Sendable, Equatable {
    /// How a connection (or an attempt at one) ended.
    public enum Ending: Sendable, Equatable {
        /// It never opened: nobody listening, or the handshake was refused.
        case refused
        /// A close frame ended it after it opened; `lived` is how long it was open.
        case clean(lived: Duration)
        /// It broke after it opened: dropped (1006), dead (no pong), or out of step.
        case broken
    }

    /// A connection that lived less than this and then closed cleanly counts as quick.
    public static let quick: Duration = .seconds(1)

    private var backoff: Backoff
    private var lastWasQuickClean = false

    public init(capMs: Int) {
        backoff = Backoff(first: .seconds(1), cap: .milliseconds(capMs))
    }

    /// The server sent `ready`: it is up and took the token, so the next error waits 1 s again.
    public mutating func ready() { backoff.reset() }

    /// How long to wait before the next attempt.
    public mutating func delay(after ending: Ending) -> Duration {
        switch ending {
        case .refused, .broken:
            lastWasQuickClean = false
            return backoff.next()
        case .clean(let lived):
            let quick = lived < Self.quick
            defer { lastWasQuickClean = quick }
            if quick && lastWasQuickClean { return backoff.next() }
            backoff.reset()
            return .zero
        }
    }
}
