// The daemon's executor (MainLoop) on a thread of the test's own, as the task
// executor of the tasks each test makes (the daemon runs it on its main thread,
// as Swift's main and default executor; the tests keep Swift's own): jobs from
// other threads, timers in deadline order, a timer years away, many timers, a
// job that throws, cancelled sleeps. Only where the loop is built (MainLoop.swift).
// Sleeps in a task that prefers the loop are timed by the loop: `timers` counts them.
#if compiler(>=6.3) && !PARLOUR_NO_MAIN_LOOP
import Glibc
@testable import Satellite
import Synchronization
import Testing

@Suite("The main loop runs jobs and timers on its one thread", .timeLimit(.minutes(1)))
struct MainLoopTests {
    /// A loop on a thread of the test's, until `stop()`.
    final class LoopThread: Sendable {
        let executor: MainLoopExecutor
        private let ended: AsyncStream<Void>

        private init(_ executor: MainLoopExecutor, ended: AsyncStream<Void>) {
            self.executor = executor
            self.ended = ended
        }

        static func start() async -> LoopThread {
            let (ended, end) = AsyncStream.makeStream(of: Void.self)
            let executor = await withCheckedContinuation { made in
                let started = SystemThread.start(name: "test loop") {
                    let executor = MainLoopExecutor()  // made on the thread that runs it
                    made.resume(returning: executor)
                    executor.run()
                    end.finish()
                }
                precondition(started, "Cannot start a thread")
            }
            return LoopThread(executor, ended: ended)
        }

        /// Ends the loop, and waits until its thread has left it.
        func stop() async {
            executor.stop()
            for await _ in ended {}
        }

        /// Whether the caller runs on the loop's thread.
        var isCurrent: Bool { executor.isIsolatingCurrentContext() == true }

        /// Runs `body` as a task on the loop.
        @discardableResult
        func task<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) -> Task<T, any Error> {
            Task(executorPreference: executor) { try await body() }
        }

        /// Timers not yet due (the loop's own queue, not libdispatch's).
        var timers: Int { executor.pendingTimers }
    }

    struct Failure: Error {}

    /// What the tasks did, in the order they did it.
    final class Record: Sendable {
        private let items = Mutex<[Int]>([])
        func add(_ item: Int) { items.withLock { $0.append(item) } }
        var all: [Int] { items.withLock { $0 } }
    }

    @Test("jobs from other threads all run on the loop's thread, each thread's in the order it gave them")
    func jobsFromOtherThreads() async {
        let loop = await LoopThread.start()
        let (runs, report) = AsyncStream.makeStream(of: (thread: Int, job: Int, onLoop: Bool).self)
        let threads = 4, jobs = 250
        for thread in 0..<threads {
            #expect(SystemThread.start(name: "test giver") {
                for job in 0..<jobs { loop.task { _ = report.yield((thread, job, loop.isCurrent)) } }
            })
        }
        var next = [Int](repeating: 0, count: threads)
        var count = 0
        for await run in runs {
            #expect(run.onLoop)
            #expect(run.job == next[run.thread], "thread \(run.thread)")
            next[run.thread] = run.job + 1
            count += 1
            if count == threads * jobs { break }
        }
        #expect(next == [Int](repeating: jobs, count: threads))
        await loop.stop()
    }

    @Test("timers given in any order fire in the order of their deadlines, none before it, on the loop's thread")
    func timersInDeadlineOrder() async throws {
        let loop = await LoopThread.start()
        // Far enough ahead that every timer is set before the first is due, on a loaded machine too.
        let base = ContinuousClock.now + .milliseconds(500)
        let offsets = Array(0..<20).shuffled()
        let fired = Record()
        let sleepers = offsets.map { offset in
            loop.task {
                let deadline = base + .milliseconds(20 * offset)
                try await Task.sleep(until: deadline, clock: .continuous)
                #expect(ContinuousClock.now >= deadline)
                #expect(loop.isCurrent)
                fired.add(offset)
            }
        }
        for sleeper in sleepers { try await sleeper.value }
        #expect(fired.all == Array(0..<20))
        #expect(loop.timers == 0)
        await loop.stop()
    }

    @Test("a timer a hundred years away neither overflows nor fires early; the loop goes on with the others, and cancelling it ends its sleep")
    func timerFarAway() async throws {
        let loop = await LoopThread.start()
        let far = loop.task { try await Task.sleep(for: .seconds(100 * 365 * 86_400)) }
        // In order behind it on the loop: by the time this runs, the far timer is set.
        try await loop.task { try await Task.sleep(for: .milliseconds(20)) }.value
        #expect(loop.timers == 1)
        far.cancel()
        await #expect(throws: CancellationError.self) { try await far.value }
        // The loop still turns.
        #expect(try await loop.task { loop.isCurrent }.value)
        await loop.stop()
    }

    @Test("many timers at once: each fires once, none before its deadline, on the loop's thread")
    func manyTimers() async throws {
        let loop = await LoopThread.start()
        let count = 1000
        let fired = Record()
        let sleepers = (0..<count).map { step in
            loop.task {
                // Deadlines closer than the loop's own jitter (its thread can be preempted while it
                // turns an instant into a delay): no order among them is asserted, only that none is early.
                let deadline = ContinuousClock.now + .microseconds(Int.random(in: 0..<200_000))
                try await Task.sleep(until: deadline, clock: .continuous)
                #expect(ContinuousClock.now >= deadline)
                #expect(loop.isCurrent)
                fired.add(step)
            }
        }
        for sleeper in sleepers { try await sleeper.value }
        #expect(fired.all.sorted() == Array(0..<count))
        #expect(loop.timers == 0)
        await loop.stop()
    }

    @Test("a job that throws ends its own task with the error; the loop runs the next")
    func jobThatThrows() async throws {
        let loop = await LoopThread.start()
        let failing = loop.task { () async throws -> Int in
            try await Task.sleep(for: .milliseconds(1))
            throw Failure()
        }
        await #expect(throws: Failure.self) { try await failing.value }
        await #expect(throws: Failure.self) { try await loop.task { () throws -> Int in throw Failure() }.value }
        #expect(try await loop.task { loop.isCurrent }.value)
        await loop.stop()
    }

    @Test("cancelled sleeps end at once with CancellationError, on the loop's thread")
    func cancelledSleeps() async throws {
        let loop = await LoopThread.start()
        let sleepers = (0..<50).map { _ in
            loop.task { () async -> Bool in
                do {
                    try await Task.sleep(for: .seconds(3600))
                    return false
                } catch {
                    return error is CancellationError && loop.isCurrent
                }
            }
        }
        // Set, all of them, once a job behind them has run.
        try await loop.task {}.value
        #expect(loop.timers == 50)
        for sleeper in sleepers { sleeper.cancel() }
        for sleeper in sleepers { #expect(try await sleeper.value) }
        #expect(try await loop.task { loop.isCurrent }.value)
        await loop.stop()
    }
}
#endif
