// Every task and actor of the daemon on its main thread, in one loop: Swift's
// main and default executor, put in place of libdispatch's before the first task
// starts (`install`, from the daemon's main.swift; the tests keep Swift's own).
//
// Written by hand because Swift on Linux has no other: its default executor is
// libdispatch's thread pool, which keeps a timer that wakes the process once a
// second for as long as it lives (the pool's monitor, armed by the first task),
// and starts and ends a thread whenever work comes after five idle seconds.
// Streaming, that was 1.18 of the daemon's 14.6 wake-ups a second and the last
// thing over the runtime issue's aim (BENCHMARKS.md). The daemon's async work is
// small and short (its audio, HTTP, control and blocking calls each have a thread
// of their own), so one thread does it all in order, and wakes only when a job
// comes from another thread or a timer is due.
//
// Swift 6.3 offers the replacement only behind `@_spi(ExperimentalCustomExecutors)`;
// a toolchain that changes it fails to build here, it cannot change behaviour unseen.
// Before 6.3, or built with -DPARLOUR_NO_MAIN_LOOP, the daemon runs on Swift's own
// executor instead: the same daemon, with libdispatch's threads and wake-ups
// (docs/development.md says what that costs).
#if compiler(>=6.3) && !PARLOUR_NO_MAIN_LOOP
@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
import Glibc
import Synchronization

/// For the daemon's main.swift: `install()` before anything else, `run()` at the end.
public enum MainLoop {
    /// Whether this build has the loop (else Swift's own executor runs the daemon).
    public static let isAvailable = true

    /// Makes the loop Swift's main and default executor. Before the first task, on the main thread.
    public static func install() {
        _ = MainLoopExecutor.shared  // made here, on the main thread, which it then runs on
        _createExecutors(factory: MainLoopExecutor.Factory.self)
    }

    /// Runs the jobs as they come, for ever; the daemon ends with `_exit` from one of them.
    public static func run() -> Never {
        MainLoopExecutor.shared.run()
        fatalError("The main loop stopped")
    }
}

final class MainLoopExecutor: MainExecutor, TaskExecutor, SchedulingExecutor, Sendable {
    static let shared = MainLoopExecutor()

    private struct Timer {
        let deadline: UInt64  // CLOCK_MONOTONIC ns
        let job: UnownedJob
    }

    private struct Queue {
        var ready: [UnownedJob] = []
        /// Set by `stop()`: only tests stop a loop.
        var stopped = false
        /// By deadline, then in the order they came. A few at a time (the daemon's timeouts
        /// and retries), so a sorted array.
        var timers: [Timer] = []
        /// Set while the loop sleeps in poll: only then does a job from another thread wake it.
        var sleeping = false
    }

    private let queue = Mutex(Queue())
    private let wakePipe: WakePipe
    /// The thread that made it, which runs the loop: the daemon's main thread (a test's own, in tests).
    private let thread = pthread_self()

    init() {
        guard let pipe = WakePipe() else { fatalError("Cannot make the main loop's pipe: \(String(cString: strerror(errno)))") }
        wakePipe = pipe
    }

    /// For Swift's checks that code runs where its isolation says (`MainActor.assumeIsolated`).
    func isIsolatingCurrentContext() -> Bool? {
        pthread_equal(thread, pthread_self()) != 0
    }

    func checkIsolated() {
        precondition(pthread_equal(thread, pthread_self()) != 0, "Not on the daemon's main loop")
    }

    enum Factory: ExecutorFactory {
        static var mainExecutor: any MainExecutor { MainLoopExecutor.shared }
        static var defaultExecutor: any TaskExecutor { MainLoopExecutor.shared }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        add { $0.ready.append(job) }
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        schedule(UnownedJob(job), after: clock.now.duration(to: instant))
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        schedule(UnownedJob(job), after: delay)
    }

    /// The daemon's clocks (continuous, suspending) count in `Duration`, and are timed here on
    /// CLOCK_MONOTONIC: a sleep does not count time the machine was suspended (a satellite is not).
    /// A clock that counts otherwise (none in the daemon) fires at once.
    private func schedule(_ job: UnownedJob, after delay: some DurationProtocol) {
        let timer = Timer(deadline: MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(in: delay as? Duration ?? .zero), job: job)
        add { queue in
            let at = queue.timers.firstIndex { $0.deadline > timer.deadline } ?? queue.timers.endIndex
            queue.timers.insert(timer, at: at)
        }
    }

    /// Puts work in the queue, and wakes the loop if it sleeps (once: the first such job clears `sleeping`).
    private func add(_ change: (inout Queue) -> Void) {
        let wake = queue.withLock { queue in
            change(&queue)
            defer { queue.sleeping = false }
            return queue.sleeping
        }
        if wake { wakePipe.wake() }
    }

    /// Runs jobs as they come, until `stop()`; on the thread that made the loop.
    func run() {
        var jobs: [UnownedJob] = []
        var request = [wakePipe.pollRequest]
        let heartbeat = Heartbeat("main", serves: "every task and actor (control requests, turns, the server's link)",
                                  bound: .seconds(10)) { [wakePipe] in wakePipe.wake() }
        while true {
            let timeout: Int32? = queue.withLock { queue in
                guard !queue.stopped else { return nil }
                let now = MonotonicClock.nanoseconds()
                let due = queue.timers.prefix { $0.deadline <= now }.count
                queue.ready.append(contentsOf: queue.timers.prefix(due).map(\.job))
                queue.timers.removeFirst(due)
                swap(&jobs, &queue.ready)
                guard jobs.isEmpty else { return 0 }
                queue.sleeping = true
                return queue.timers.first.map { MonotonicClock.pollTimeout(until: $0.deadline, from: now) } ?? -1
            }
            guard let timeout else { return }
            if jobs.isEmpty {
                if heartbeat.sleeping(timeout: timeout, { poll(&request, 1, timeout) }) > 0 { wakePipe.drain() }
                queue.withLock { $0.sleeping = false }
                continue
            }
            heartbeat.turning()
            for job in jobs { job.runSynchronously(on: asUnownedSerialExecutor()) }
            jobs.removeAll(keepingCapacity: true)
        }
    }

    /// Timers not yet due: for tests.
    var pendingTimers: Int { queue.withLock { $0.timers.count } }

    /// Ends `run()` once the jobs it has taken have run. The daemon's loop is never stopped: it exits
    /// from a job when it is done.
    func stop() {
        add { $0.stopped = true }
    }
}
#else
import Dispatch

/// Swift's own executor, where the loop cannot be had: the same calls, for main.swift.
public enum MainLoop {
    public static let isAvailable = false

    public static func install() {}

    /// Runs the main queue (the main actor's jobs) for ever; the daemon ends with `_exit`.
    public static func run() -> Never {
        dispatchMain()
    }
}
#endif
