import Foundation
import Glibc
import Synchronization
import Testing
@testable import Satellite

@Suite("jobs that come and go reuse the threads of the jobs before them", .timeLimit(.minutes(1)))
struct SpareThreadsTests {
    /// The calling thread's kernel id (gettid is a GNU extension Swift does not see; /proc/thread-self names it).
    private static func tid() -> Int32 {
        var path = [CChar](repeating: 0, count: 64)
        let n = path.withUnsafeMutableBufferPointer { readlink("/proc/thread-self", $0.baseAddress!, $0.count) }
        let text = String(decoding: path.prefix(max(n, 0)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return Int32(text.split(separator: "/").last ?? "") ?? -1
    }

    /// The calling thread's id and kernel name.
    private static func thread() -> (id: Int32, name: String) {
        let fd = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        return (tid(), String(decoding: bytes.prefix(max(count, 0)), as: UTF8.self).trimmingCharacters(in: .newlines))
    }

    /// A pool of `keep` and the stream of its threads starting to wait or ending.
    private static func pool(keep: Int) -> (SpareThreads, AsyncStream<SpareThreads.Change>.Iterator) {
        let (changes, change) = AsyncStream.makeStream(of: SpareThreads.Change.self)
        return (SpareThreads(keep: keep, observe: { change.yield($0) }), changes.makeAsyncIterator())
    }

    private static func run(_ pool: SpareThreads, _ name: String) async -> (id: Int32, name: String) {
        await withCheckedContinuation { done in
            #expect(pool.run(name: name) { done.resume(returning: thread()) })
        }
    }

    @Test("a job after another runs on its thread, under its own name")
    func reuse() async {
        let (pool, changes) = Self.pool(keep: 2)
        var waits = changes
        let first = await Self.run(pool, "first-job")
        #expect(first.name == "first-job")
        #expect(await waits.next() == .waiting)
        let second = await Self.run(pool, "second-job")
        #expect(second.id == first.id)
        #expect(second.name == "second-job")
    }

    @Test("jobs at once each get a thread, so one that waits for another never waits forever")
    func atOnce() async {
        let (pool, _) = Self.pool(keep: 2)
        let gate = DispatchSemaphore(value: 0)
        async let blocked: Bool = withCheckedContinuation { done in
            pool.run(name: "blocked") { done.resume(returning: gate.wait(timeout: .now() + 20) == .success) }
        }
        let releaser = await Self.run(pool, "releaser")
        gate.signal()
        #expect(await blocked)
        #expect(releaser.name == "releaser")
    }

    /// The threads two jobs held at once ran on: each job waits until both have begun.
    private static func two(_ pool: SpareThreads, _ names: [String]) async -> [Int32] {
        final class Both: Sendable {
            let ids = Mutex<[Int32]>([])
            let gate = DispatchSemaphore(value: 0)
        }
        let both = Both()
        await withTaskGroup(of: Void.self) { group in
            for name in names {
                group.addTask {
                    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                        pool.run(name: name) {
                            let count = both.ids.withLock { ids in
                                ids.append(Self.tid())
                                return ids.count
                            }
                            if count == 2 { both.gate.signal() } else { _ = both.gate.wait(timeout: .now() + 20) }
                            done.resume()
                        }
                    }
                }
            }
        }
        return both.ids.withLock { $0 }
    }

    @Test("no more than keep threads wait; the next jobs reuse those and make the rest anew")
    func keep() async {
        let (pool, changes) = Self.pool(keep: 1)
        var told = changes
        // Two jobs held at once: two threads, of which one may wait afterwards.
        let held = Set(await Self.two(pool, ["held-1", "held-2"]))
        #expect(held.count == 2)
        // One waits, the other ends.
        let both = [await told.next(), await told.next()]
        #expect(both.contains(.waiting) && both.contains(.ended), "\(both)")
        // Two more at once: one reuses the thread that waited, the other is new.
        let later = await Self.two(pool, ["later-1", "later-2"])
        let reused = later.filter(held.contains)
        #expect(reused.count == 1, "reused \(reused) of \(held)")
    }

    @Test("what a job held is let go when it returns, not kept while its thread waits")
    func letGo() async {
        final class Connection: Sendable {}
        let (pool, changes) = Self.pool(keep: 2)
        var waits = changes
        weak var held: Connection?
        do {
            let connection = Connection()
            held = connection
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                pool.run(name: "holder") { withExtendedLifetime(connection) { done.resume() } }
            }
        }
        #expect(await waits.next() == .waiting)
        #expect(held == nil)
    }
}
