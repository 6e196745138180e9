import Foundation
import Glibc
import Synchronization
import Testing
@testable import Satellite

@Suite("blocking calls run on the threads made for them", .timeLimit(.minutes(1)))
struct BlockingThreadTests {
    /// The kernel's name of the calling thread.
    private static func threadName() -> String {
        let fd = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        return String(decoding: bytes.prefix(max(count, 0)), as: UTF8.self).trimmingCharacters(in: .newlines)
    }

    @Test("jobs run on the thread named blocking, one at a time")
    func order() async {
        final class Probe: Sendable {
            let ran = Atomic<Int>(0)
            let busy = Atomic<Int>(0)
            let overlapped = Atomic<Bool>(false)
        }
        let probe = Probe()
        #expect(await BlockingThread.local.run { Self.threadName() } == "blocking")
        // Queued from many tasks at once; each job notes itself, and whether another was running.
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    await BlockingThread.local.run {
                        if probe.busy.add(1, ordering: .relaxed).newValue > 1 { probe.overlapped.store(true, ordering: .relaxed) }
                        usleep(1000)
                        probe.ran.add(1, ordering: .relaxed)
                        probe.busy.subtract(1, ordering: .relaxed)
                    }
                }
            }
        }
        let ran = probe.ran.load(ordering: .relaxed)
        #expect(ran == 20)
        // A thread per job would run some of them together.
        let ranTogether = probe.overlapped.load(ordering: .relaxed)
        #expect(!ranTogether)
    }

    @Test("a slow name look-up holds up no state file or group look-up")
    func lanes() async {
        let gate = DispatchSemaphore(value: 0)
        #expect(await BlockingThread.lookups.run { Self.threadName() } == "lookup")
        // A look-up that waits until the local job has run: on one shared thread it would wait forever.
        async let slowLookup: Bool = BlockingThread.lookups.run { gate.wait(timeout: .now() + 20) == .success }
        _ = await BlockingThread.local.run { gate.signal() }
        #expect(await slowLookup)
    }

    @Test("a throwing job's error comes back to the caller")
    func throwing() async {
        struct Refused: Error, Equatable {}
        await #expect(throws: Refused()) {
            try await BlockingThread.local.run(throwing: { () throws(Refused) -> Int in throw Refused() })
        }
    }
}
