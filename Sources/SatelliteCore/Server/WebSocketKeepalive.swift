// When the WebSocket client pings a quiet server, and when a silent one
// counts as dead: on readings of CLOCK_MONOTONIC in nanoseconds, passed in, so
// the rules are a table test. Pure; WebSocketClient asks it each wake-up.
// Easy to get wrong: any byte from the server is a sign of it (a pong stuck
// behind a long message over a slow link is not its death); the server is not
// blamed for a ping that went late because this side was held up; a dead
// server is not judged while this side's consumer is behind (nothing is read
// then). Sums hold at any uptime, with durations of at most 2^32 s
// (MonotonicClock.nanoseconds(in:) gives no more).

/// A connection's keepalive clock.
public struct WebSocketKeepalive: Sendable, Equatable {
    /// What to do now.
    public enum Step: Sendable, Equatable { case wait, ping, dead }

    /// How long after the server's last sign a ping goes, and again after each unanswered one.
    public let pingAfter: UInt64
    /// How long the server may go without a sign before it counts as dead.
    public let deadAfter: UInt64
    /// When the server last sent anything.
    public private(set) var lastHeard: UInt64
    /// When the next ping is due.
    public private(set) var nextPing: UInt64
    /// When the first ping since the server last sent anything went; nil while none is unanswered.
    public private(set) var pingSentAt: UInt64?

    /// Starts with the server heard `now` (its answer to the upgrade); the times in nanoseconds.
    public init(heardAt now: UInt64, pingAfter: UInt64, deadAfter: UInt64) {
        self.pingAfter = pingAfter
        self.deadAfter = deadAfter
        lastHeard = now
        nextPing = now + pingAfter
    }

    /// The server sent something.
    public mutating func heard(at now: UInt64) {
        lastHeard = now
        nextPing = now + pingAfter
        pingSentAt = nil
    }

    /// Whether a ping is unanswered.
    public var awaitingPong: Bool { pingSentAt != nil }

    /// When a silent server counts as dead: `deadAfter` after its last sign, and never before a
    /// ping has had `deadAfter - pingAfter` to be answered; nil while no ping is unanswered.
    public var deadAt: UInt64? {
        let answerWithin = deadAfter > pingAfter ? deadAfter - pingAfter : 0
        return pingSentAt.map { max(lastHeard + deadAfter, $0 + answerWithin) }
    }

    /// What to do `now`: `.ping` once it is due (and the next one is then counted from now),
    /// `.dead` once `deadAt` passed, unless `consumerBehind` (this side is not reading then).
    public mutating func step(at now: UInt64, consumerBehind: Bool) -> Step {
        if let deadAt, now >= deadAt, !consumerBehind { return .dead }
        guard now >= nextPing else { return .wait }
        nextPing = now + pingAfter
        if pingSentAt == nil { pingSentAt = now }
        return .ping
    }
}
