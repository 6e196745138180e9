// One broadcast of SatelliteEvents to every subscriber. `publish` is synchronous
// so that a C callback or an actor can publish in order without starting a task,
// and each subscriber keeps only its newest events, so a slow `parlourctl watch`
// cannot grow the daemon's memory. Easy to get wrong: `publish` yields under the
// lock (that keeps the order), and a yield that wakes a subscriber takes that
// task's status lock, which a task being cancelled holds while its stream's
// onTermination runs; so nothing that runs on termination may take this lock
// (it did, and both pool threads deadlocked: the daemon hung for good in a
// shutdown or a mute). A subscriber that has gone is dropped at the next publish.
import Synchronization
import SatelliteCore

/// Broadcasts events to every subscriber in the order they were published.
public final class EventBus: Sendable {
    private struct Subscribers: ~Copyable {
        var next = 0
        var continuations: [Int: AsyncStream<SatelliteEvent>.Continuation] = [:]
    }

    private let subscribers = Mutex(Subscribers())
    private let taps: [@Sendable (SatelliteEvent) -> Void]

    /// `taps` see every event synchronously, before `publish` returns: the status
    /// board is one, so a status asked for right after a result is already current.
    public init(taps: [@Sendable (SatelliteEvent) -> Void] = []) {
        self.taps = taps
    }

    /// A stream of every event published from now on; it ends when the caller stops iterating.
    public func subscribe(bufferingNewest limit: Int = 256) -> AsyncStream<SatelliteEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: SatelliteEvent.self, bufferingPolicy: .bufferingNewest(limit))
        subscribers.withLock { s in
            s.next += 1
            s.continuations[s.next] = continuation
        }
        return stream
    }

    /// Hands the event to every subscriber; never blocks.
    public func publish(_ event: SatelliteEvent) {
        for tap in taps { tap(event) }
        subscribers.withLock { s in
            for (key, continuation) in s.continuations {
                if case .terminated = continuation.yield(event) { s.continuations.removeValue(forKey: key) }
            }
        }
    }

    /// Ends every subscription (at shutdown).
    public func finish() {
        let all = subscribers.withLock { s in
            defer { s.continuations.removeAll() }
            return Array(s.continuations.values)
        }
        for continuation in all { continuation.finish() }
    }
}

extension EventBus {
    /// A journal line with a fixed message and data beside it.
    public func notice(_ priority: Priority, _ message: String, _ fields: [String: String] = [:]) {
        publish(.notice(priority, message, fields: fields))
    }
}
