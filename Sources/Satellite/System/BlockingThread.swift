// The one thread for the blocking calls nothing else owns: getaddrinfo at
// pinning and before a request to a name nobody pinned, the fsync of the
// state files, the `_r` look-ups of users and groups. They are rare and
// short, so one thread taking them in turn is enough, and none of them
// ever blocks a thread of Swift's cooperative pool (two of them on this
// machine). Started on first use; it then waits in sem_wait, waking for
// nothing else.
import Glibc
import Synchronization

enum BlockingThread {
    private static let queue = Queue()

    /// Runs `body` on the blocking thread and returns its value; the caller's task is suspended,
    /// never its thread. Jobs run one at a time, in the order they came.
    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (done: CheckedContinuation<T, Never>) in
            queue.add { done.resume(returning: body()) }
        }
    }

    /// Like `run`, for a body that throws.
    static func run<T: Sendable, E: Error>(throwing body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await run {
            do throws(E) { return .success(try body()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    private final class Queue: Sendable {
        private let jobs = Mutex<(waiting: [@Sendable () -> Void], started: Bool)>(([], false))
        /// Counts the jobs waiting; the thread sleeps on it. Allocated once and never freed (the queue lives as long as the process).
        nonisolated(unsafe) private let count: UnsafeMutablePointer<sem_t> = {
            let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
            sem_init(semaphore, 0, 0)
            return semaphore
        }()

        func add(_ job: @escaping @Sendable () -> Void) {
            let start = jobs.withLock { state in
                state.waiting.append(job)
                defer { state.started = true }
                return !state.started
            }
            if start, !SystemThread.start(name: "blocking", { [self] in serve() }) {
                // No thread to be had: run it here rather than leave a continuation waiting.
                jobs.withLock { $0.started = false }
                take()?()
                return
            }
            sem_post(count)
        }

        private func take() -> (@Sendable () -> Void)? {
            jobs.withLock { $0.waiting.isEmpty ? nil : $0.waiting.removeFirst() }
        }

        private func serve() {
            while true {
                while sem_wait(count) != 0 {}  // EINTR
                take()?()
            }
        }
    }
}
