// The work a part starts while it runs (a reply playing, a timer, a request in
// flight, a microphone being read), run as children of the part's `run()`
// rather than as detached tasks: cancelling `run()` (shutdown) cancels all of it,
// and nothing a part started outlives it. Each piece can still be cancelled on
// its own, and awaited. Work started before `run()` begins waits for it.
import Synchronization

/// Children of one `run()`.
public final class WorkGroup: Sendable {
    private struct Job: Sendable {
        let body: @Sendable () async -> Void
        let handle: Handle
    }

    /// One piece of work: cancel it, or wait for its end.
    public final class Handle: Sendable {
        fileprivate let gate: AsyncStream<Void>
        fileprivate let opener: AsyncStream<Void>.Continuation
        private let state = Mutex<(ended: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        fileprivate init() {
            (gate, opener) = AsyncStream.makeStream(of: Void.self)
        }

        /// Cancels the work (it sees task cancellation).
        public func cancel() { opener.finish() }

        /// True once the work has ended, or at once when it came after run() had ended and never ran.
        public var hasEnded: Bool { state.withLock { $0.ended } }

        /// Returns once the work has ended.
        public func wait() async {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let ended = state.withLock { state in
                    if !state.ended { state.waiters.append(waiter) }
                    return state.ended
                }
                if ended { waiter.resume() }
            }
        }

        fileprivate func ended() {
            let waiters = state.withLock { state in
                state.ended = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    private let jobs: AsyncStream<Job>
    private let queue: AsyncStream<Job>.Continuation

    public init() {
        (jobs, queue) = AsyncStream.makeStream(of: Job.self)
    }

    /// Starts `body` as a child of `run()`.
    @discardableResult
    public func start(_ body: @escaping @Sendable () async -> Void) -> Handle {
        let handle = Handle()
        // Once run() has ended, nothing more runs: the work counts as ended at once.
        if case .terminated = queue.yield(Job(body: body, handle: handle)) { handle.ended() }
        return handle
    }

    /// No more work is taken: run() returns once what runs has ended (a part that drains on its own).
    public func finish() { queue.finish() }

    /// A part's whole `run()`, for a part that holds something until shutdown: the work as it is
    /// started, until cancelled; then `stopping` (on the caller's actor: the part lets go of what it
    /// holds, which ends what uses it), and returns once the work has ended.
    public func run(isolation: isolated (any Actor)? = #isolation, thenOnCancel stopping: () async -> Void) async {
        async let children: Void = run()
        await Service.untilCancelled()
        await stopping()
        await children
    }

    /// Runs the work as it is started, until cancelled; then cancels what runs and waits for its end.
    public func run() async {
        await withDiscardingTaskGroup { group in
            for await job in jobs {
                group.addTask {
                    await withTaskGroup(of: Void.self) { one in
                        one.addTask { await job.body() }
                        // Ends when the handle is cancelled (or, cancelled itself, once the body has ended).
                        one.addTask { for await _ in job.handle.gate {} }
                        await one.next()
                        one.cancelAll()
                    }
                    job.handle.ended()
                }
            }
        }
        queue.finish()
    }
}
