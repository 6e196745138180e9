// Keeps tests that block off Swift's cooperative pool. The pool has one thread
// a core, two on this machine, and a test that blocks one (waitpid on espeak-ng,
// sox or the Python reference; a long run of the wake-word models) takes half of
// every async test's time away: two at once stalled a whole parallel pass for a
// minute, and every test waiting on the pool then hit its time limit (a CI run's
// JSONValueTests, EndpointerTests, DaemonLifecycleTests, all at once).
// `.offThePool` runs a suite's tests on threads of their own instead, where
// they block nobody else (the same task, so #expect still finds its test);
// `OwnThread.run` does the same for one blocking call inside an async test.
import Foundation
// Testing is there only when tests are built; `swift build` (scripts/bench, soak, demo) builds this target too.
#if canImport(Testing)
import Testing
#endif

/// A task executor for blocking tests: two threads to begin with, and one more (up to `most`) whenever a job
/// comes while every thread is busy. Most of what blocks here waits (waitpid on espeak-ng and sox), so a
/// fixed two made the rest queue: at a load of 16 a parameterized suite's last case waited out its minute
/// before it began (EndpointerSpeechTests, a CI run of b61877a).
public final class BlockingTestExecutor: TaskExecutor, @unchecked Sendable {
    public static let shared = BlockingTestExecutor(threads: 2, most: 8)

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var threads = 0
    private var idle = 0
    private let most: Int

    private init(threads: Int, most: Int) {
        self.most = most
        condition.lock()
        for _ in 0..<threads { startThread() }
        condition.unlock()
    }

    /// Under `condition`.
    private func startThread() {
        threads += 1
        let number = threads
        // Foundation's Thread.name does not reach the kernel here (pthread_setname_np is a GNU
        // extension Swift does not see); the kernel's name is what the test of this file reads.
        let thread = Thread { [self] in
            try? "test-blocking-\(number)".write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
            serve()
        }
        thread.stackSize = 8 << 20
        thread.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        if jobs.count > idle, threads < most { startThread() }
        condition.signal()
        condition.unlock()
    }

    private func serve() {
        while true {
            condition.lock()
            idle += 1
            while jobs.isEmpty { condition.wait() }
            idle -= 1
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

#if canImport(Testing)
/// Runs each test of a suite (or one test) on `BlockingTestExecutor`, not on the cooperative pool.
public struct OffThePool: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(BlockingTestExecutor.shared) {
            // The operation starts on the caller's thread; the first suspension moves it over.
            await Task.yield()
            try await function()
        }
    }
}

extension Trait where Self == OffThePool {
    /// The tests block (tools, the Python reference, long model runs): they run off the cooperative pool.
    public static var offThePool: OffThePool { OffThePool() }
}
#endif

/// One blocking call, from an async test, on a thread of its own.
public enum OwnThread {
    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<T, any Error>) in
            let thread = Thread {
                try? "test-own-thread".write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
                done.resume(with: Result { try body() })
            }
            thread.stackSize = 8 << 20
            thread.start()
        }
    }
}
