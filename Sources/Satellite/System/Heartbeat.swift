// Each long-lived thread's sign that it turns, and the one list of them the
// watchdog reads (Watchdog). A thread makes its heartbeat as it starts, calls
// `turning()` each time round its loop, and sleeps for work through
// `sleeping(timeout:)` (its poll, its sem_wait; Avahi's thread, whose poll is
// not ours, says `waiting` as it leaves each of our callbacks). While it works it counts as
// well for its bound after its last turn; while it sleeps it counts as well
// until its timeout has passed by more than its bound, and for ever when it
// sleeps with none: a thread waiting for work that does not come (a control
// loop with no client, a closed microphone, a quiet house) is healthy, and is
// never woken to prove it. So what is seen is a thread stuck inside a call: a
// driver, a lock, a blocking write, a job that never ends.
import Glibc
import SatelliteCore
import Synchronization

final class Heartbeat: Sendable {
    /// The thread's name, as /proc shows it (`audio`, `control`, …).
    let name: String
    /// What stops while it is stuck, for the journal ("the microphone and the speaker").
    let serves: String
    let bound: Duration
    private let boundNanoseconds: UInt64
    /// CLOCK_MONOTONIC ns by which it must turn again; `.max` while it sleeps with no timeout.
    private let due = Atomic<UInt64>(.max)
    /// CLOCK_MONOTONIC ns of its last turn, or of the start of its sleep.
    private let turned = Atomic<UInt64>(0)
    /// Makes the thread turn soon, though no work is there (for a test's stall).
    private let wake: @Sendable () -> Void
    /// This thread is the one a test stalls (TestBounds.stallVariable).
    private let stalls: Bool

    /// A thread's heartbeat, in the list from now on, as if it had just turned. `wake` makes it turn
    /// though no work came.
    init(_ name: String, serves: String, bound: Duration, wake: @escaping @Sendable () -> Void) {
        self.name = name
        self.serves = serves
        self.bound = Heartbeat.testBound.map { min($0, bound) } ?? bound
        boundNanoseconds = MonotonicClock.nanoseconds(in: self.bound)
        self.wake = wake
        stalls = Heartbeat.stalled == name
        record(due: boundNanoseconds)
        Heartbeat.all.withLock { $0.append(self) }
        if stalls, Heartbeat.stallArmed.load(ordering: .relaxed) { wake() }
    }

    /// Each time round the thread's loop.
    func turning() {
        record(due: boundNanoseconds)
        if stalls, Heartbeat.stallArmed.load(ordering: .relaxed) { Heartbeat.stallForever() }
    }

    /// Runs `wait`, the thread's sleep for work (a poll, a sem_wait) of at most `timeout` ms (-1: none),
    /// and counts a turn once it returns.
    func sleeping<T>(timeout: Int32, _ wait: () -> T) -> T {
        waiting(timeout: timeout)
        defer { turning() }
        return wait()
    }

    /// The thread goes to sleep for work for at most `timeout` ms (-1: none); it turns when it wakes.
    func waiting(timeout: Int32) {
        record(due: timeout < 0 ? .max : (UInt64(timeout) * 1_000_000).saturatingAdd(boundNanoseconds))
    }

    /// A turn now, and the next one due within `nanoseconds` (`.max`: none is).
    private func record(due nanoseconds: UInt64) {
        let now = MonotonicClock.nanoseconds()
        turned.store(now, ordering: .relaxed)
        due.store(now.saturatingAdd(nanoseconds), ordering: .relaxed)
    }

    /// The thread has ended: it is no longer watched.
    func ended() {
        due.store(.max, ordering: .relaxed)
        Heartbeat.all.withLock { $0.removeAll { $0 === self } }
    }

    /// How long since it last turned, if that is past its bound at `now`.
    func late(at now: UInt64) -> Duration? {
        guard now > due.load(ordering: .relaxed) else { return nil }
        let since = turned.load(ordering: .relaxed)
        return .nanoseconds(Int64(clamping: now > since ? now - since : 0))
    }

    /// Every thread's heartbeat, as their threads started.
    static var threads: [Heartbeat] { all.withLock { $0 } }

    private static let all = Mutex<[Heartbeat]>([])

    // MARK: A test's stall

    private static let stalled: String? = TestBounds.stalledThread(getenv(TestBounds.stallVariable).map { String(cString: $0) })
    private static let testBound: Duration? = TestBounds.turnSeconds(getenv(TestBounds.turnVariable).map { String(cString: $0) })
        .map { .seconds($0) }
    private static let stallArmed = Atomic<Bool>(false)

    /// From now on the thread a test named stops at its next turn, as if stuck in a call; it is
    /// woken to take that turn. Nothing, unless a test named one.
    static func armStall() {
        guard let stalled, !stallArmed.exchange(true, ordering: .relaxed) else { return }
        for heartbeat in threads where heartbeat.name == stalled { heartbeat.wake() }
    }

    private static func stallForever() -> Never {
        while true { sleep(3600) }
    }
}

extension UInt64 {
    /// The sum, or `.max` where it would overflow.
    fileprivate func saturatingAdd(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
