// Threads for jobs that come and go (a hook's reaper, a volume change, the
// offline notice's rendering, the echo delay's estimate): a job ends, and its
// thread waits for the next one instead of ending with it, so the daemon makes
// no thread per connection or per event. Its name follows the job it runs, and is `spare` while it waits. A job may block as
// long as it likes: one that finds no spare thread gets a new one, so two at
// once never wait on each other. At most `keep` wait; one more ends. Easy to get
// wrong: a job is handed over only to a thread already counted as waiting, so
// none is left in the queue with no thread to take it.
import Glibc
import Synchronization

final class SpareThreads: Sendable {
    /// The daemon's.
    static let shared = SpareThreads(keep: 2)

    private let keep: Int
    /// Told on a thread as it starts to wait, or ends (a test's, to know which threads are there to reuse).
    private let observe: (@Sendable (Change) -> Void)?

    enum Change: Sendable {
        case waiting, ended
    }
    private let state = Mutex<(jobs: [Job], waiting: Int)>(([], 0))
    /// Counts the jobs handed over; waiting threads sleep on it. Allocated once and never freed
    /// (`shared` lives as long as the process; a test's leaks its few bytes).
    nonisolated(unsafe) private let handed: UnsafeMutablePointer<sem_t> = {
        let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
        return semaphore
    }()

    private struct Job {
        let name: String
        let body: @Sendable () -> Void
    }

    private final class First: Sendable {
        private let job: Mutex<Job?>
        init(_ job: Job) { self.job = Mutex(job) }
        func take() -> Job { job.withLock { $0.take()! } }
    }

    /// `keep` threads at most wait for a job (a test makes its own, to know which thread runs what).
    init(keep: Int, observe: (@Sendable (Change) -> Void)? = nil) {
        self.keep = keep
        self.observe = observe
    }

    /// Runs `body` on a waiting thread, or a new one, named `name`. False when no thread could be made.
    @discardableResult
    func run(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        let job = Job(name: name, body: body)
        let handedOver = state.withLock { s in
            guard s.waiting > 0 else { return false }
            s.waiting -= 1
            s.jobs.append(job)
            return true
        }
        if handedOver {
            sem_post(handed)
            return true
        }
        // The new thread's closure lives as long as the thread: it holds the job only until taken.
        let first = First(job)
        return SystemThread.start(name: name) { [self] in serve(first.take()) }
    }

    private func serve(_ first: consuming Job) {
        var next: Job? = consume first
        while next != nil {
            Self.perform(next.take()!)
            let waits = state.withLock { s in
                guard s.waiting < keep else { return false }
                s.waiting += 1
                return true
            }
            guard waits else {
                observe?(.ended)
                return
            }
            SystemThread.nameCurrent("spare")
            observe?(.waiting)
            while sem_wait(handed) != 0 {}  // EINTR
            next = state.withLock { $0.jobs.removeFirst() }
            SystemThread.nameCurrent(next!.name)
        }
    }

    /// What the job held (a connection, a child) is let go when it returns, not when the next job comes.
    private static func perform(_ job: consuming Job) {
        job.body()
    }
}
