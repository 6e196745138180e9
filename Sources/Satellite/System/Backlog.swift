// What waits for a thread that writes to something that may stop taking it
// (the journal, systemd's notify socket): at most `limit` items; past that
// they are dropped and counted, and the count is said once the thread has
// caught up. Memory stays bounded however long the reader stalls.
import Synchronization

final class Backlog: Sendable {
    private let counts = Mutex<(waiting: Int, dropped: Int)>((0, 0))
    let limit: Int

    init(limit: Int) { self.limit = limit }

    /// Whether an item may be queued; false (and counted) when `limit` are waiting.
    func admit() -> Bool {
        counts.withLock { counts in
            guard counts.waiting < limit else {
                counts.dropped += 1
                return false
            }
            counts.waiting += 1
            return true
        }
    }

    /// After an item is written: how many were dropped, once none wait any more (nil otherwise).
    func written() -> Int? {
        counts.withLock { counts in
            counts.waiting -= 1
            guard counts.waiting == 0, counts.dropped > 0 else { return nil }
            defer { counts.dropped = 0 }
            return counts.dropped
        }
    }
}
