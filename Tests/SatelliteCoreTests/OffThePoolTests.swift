// The test harness's own promise: a suite marked `.offThePool` blocks none of the
// cooperative pool's threads (OffThePool.swift says why that matters here).
import Foundation
import Testing
import TestSupport

@Suite("blocking tests run off the cooperative pool", .offThePool)
struct OffThePoolTests {
    private static func threadName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("a synchronous test of such a suite runs on a thread of the blocking executor")
    func synchronous() {
        #expect(Self.threadName().hasPrefix("test-blocking-"), "ran on \(Self.threadName())")
    }

    @Test("an asynchronous one, too, and so do its child tasks")
    func asynchronous() async {
        #expect(Self.threadName().hasPrefix("test-blocking-"))
        async let structured = Self.threadName()
        let child = await structured
        #expect(child.hasPrefix("test-blocking-"), "a child task ran on \(child)")
    }

    @Test("OwnThread runs a blocking call on a thread of its own")
    func ownThread() async throws {
        let name = try await OwnThread.run { Self.threadName() }
        #expect(name == "test-own-thread")
    }
}
