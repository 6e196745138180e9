// The threads for the blocking calls nothing else owns, each taking its jobs
// in turn, so none of them ever blocks the main loop, the one thread every
// task and actor runs on (MainLoop): `local`, for the fsync of the state files
// and the `_r` look-ups of groups, rare and short; `lookups`, for
// getaddrinfo at pinning and before a request to a name nobody pinned, which
// may wait seconds on DNS or mDNS and so has a thread of its own: a slow name
// never holds up `mute` or a control request's group check; `journal`, for
// the journal's records, which a journald or a stderr that stops reading
// would hold up; `notify`, for sd_notify, likewise. Each is started on first
// use and then waits in sem_wait, waking for nothing else.
import Glibc
import Synchronization

final class BlockingThread: Sendable {
    /// State files and group look-ups.
    static let local = BlockingThread(name: "blocking", serves: "the state files and the control requests' group checks")
    /// Name look-ups.
    static let lookups = BlockingThread(name: "lookup", serves: "every look-up of a server's name")
    /// The journal's records (Journal.run): journald or stderr may stop taking them.
    static let journal = BlockingThread(name: "journal", serves: "the journal's records")
    /// systemd's notifications (Notifier): its manager may stop reading them.
    static let notify = BlockingThread(name: "notify", serves: "systemd's notifications")

    /// How long one job may take before the watchdog counts the thread as stuck: a look-up may wait
    /// on DNS timeouts and a state file's fsync on a slow SD card, but not for a minute.
    static let bound: Duration = .seconds(60)

    private let queue: Queue

    /// A thread of its own: only for a test that must hold one part's jobs and not the others'.
    /// `serves`: what waits while it is stuck, for the journal.
    init(name: String, serves: String = "its jobs") { queue = Queue(name: name, serves: serves) }

    /// Runs `body` on this thread and returns its value; the caller's task is suspended,
    /// never its thread. Jobs run one at a time, in the order they came.
    func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (done: CheckedContinuation<T, Never>) in
            queue.add { done.resume(returning: body()) }
        }
    }

    /// Runs `job` on this thread, after the jobs before it; the caller goes on at once.
    func submit(_ job: @escaping @Sendable () -> Void) {
        queue.add(job)
    }

    /// Like `run`, for a body that throws.
    func run<T: Sendable, E: Error>(throwing body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await run {
            do throws(E) { return .success(try body()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    private final class Queue: Sendable {
        private let name: String
        private let serves: String
        private let jobs = Mutex<(waiting: [@Sendable () -> Void], started: Bool)>(([], false))
        /// Counts the jobs waiting; the thread sleeps on it. Allocated once and never freed (the queue lives as long as the process).
        nonisolated(unsafe) private let count: UnsafeMutablePointer<sem_t> = {
            let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
            sem_init(semaphore, 0, 0)
            return semaphore
        }()

        init(name: String, serves: String) {
            self.name = name
            self.serves = serves
        }

        func add(_ job: @escaping @Sendable () -> Void) {
            let start = jobs.withLock { state in
                state.waiting.append(job)
                defer { state.started = true }
                return !state.started
            }
            if start, !SystemThread.start(name: name, { [self] in serve() }) {
                // No thread to be had: run it here rather than leave a continuation waiting, and the
                // jobs others queued meanwhile too (their posts are then spare; `take` finds nothing).
                jobs.withLock { $0.started = false }
                while let job = take() { job() }
                return
            }
            sem_post(count)
        }

        private func take() -> (@Sendable () -> Void)? {
            jobs.withLock { $0.waiting.isEmpty ? nil : $0.waiting.removeFirst() }
        }

        private func serve() {
            // Woken with a job that does nothing.
            let heartbeat = Heartbeat(name, serves: serves, bound: BlockingThread.bound) { [self] in add {} }
            while true {
                heartbeat.sleeping(timeout: -1) { while sem_wait(count) != 0 {} }  // EINTR
                take()?()
            }
        }
    }
}
