// The watchdog as systemd meets it, over real sd_notify datagrams: WATCHDOG=1
// keeps coming while every thread turns, idle or at work, and stops once one
// thread is stuck in a call, with the journal (stderr here) naming it. The
// stall is the daemon's test hook (PARLOUR_SATELLITE_TEST_STALL): the named
// thread stops at its first turn after the third WATCHDOG=1.
import Foundation
import Testing
import SatelliteCore
@testable import Satellite

@Suite("The watchdog watches every thread", .timeLimit(.minutes(1)))
struct WatchdogTests {
    /// Every long-lived thread, by the name /proc and the journal give it.
    static let threads = ["main", "audio", "http", "control", "signals", "blocking", "lookup", "journal", "notify", "avahi", "siblings"]

    /// A daemon with systemd's watchdog at 1 s, every thread's bound at 5 s (room for a loaded machine),
    /// and a server named by host (so the look-up and HTTP threads start; nothing listens there).
    static func start(stalling thread: String?) async throws -> DaemonHarness {
        var environment = ["WATCHDOG_USEC": "1000000", TestBounds.turnVariable: "5"]
        environment[TestBounds.stallVariable] = thread
        return try await DaemonHarness.start(config: ["room": "kitchen", "transport": "record", "server": ["url": "http://localhost:9"]],
                                             environment: environment)
    }

    @Test("WATCHDOG=1 keeps coming while every thread turns, idle or at work")
    func healthy() async throws {
        let daemon = try await Self.start(stalling: nil)
        // Work for the control, main and blocking threads (the room goes to settings.json) between the pings.
        for room in ["den", "hall", "study"] {
            #expect(try await daemon.ctl("room", room).status == 0)
        }
        // Six seconds of pings: longer than any bound, so an idle thread counted as stuck would have stopped them
        // (and said so first).
        let first = await withTaskGroup(of: String?.self) { group in
            group.addTask { await daemon.notify.nth(12, of: ["WATCHDOG=1"]) }
            group.addTask { await daemon.notify.first(of: Self.threads.map { "STATUS=The \($0) thread" }) }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
        #expect(first == "WATCHDOG=1", "\(first ?? "nothing")")
        #expect(!daemon.stderr.contains("has not turned"), Comment(rawValue: daemon.stderr))
        let names = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/task")
            .compactMap { try? String(contentsOfFile: "/proc/\(daemon.pid)/task/\($0)/comm", encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(names.contains("watchdog"), "\(names)")
        #expect(await daemon.stop() == 0)
    }

    @Test("a thread stuck in a call stops WATCHDOG=1, and the journal names it", arguments: threads)
    func stalled(thread: String) async throws {
        let daemon = try await Self.start(stalling: thread)
        // The blocking thread starts with the first state file written; the request may come after the
        // stall, and then has no answer until the daemon is killed.
        let room = Task { if thread == "blocking" { _ = try? await daemon.ctl("room", "den") } }
        let status = await daemon.notify.first(of: ["STATUS=The \(thread) thread is stuck"])
        #expect(status != nil)
        #expect(daemon.stderr.contains("The \(thread) thread has not turned for"), Comment(rawValue: daemon.stderr))
        // The others turned until then: the stall came only after the third WATCHDOG=1.
        let pings = daemon.notify.count(of: "WATCHDOG=1")
        #expect(pings >= 3)
        // Two watchdog intervals: none follows now (systemd would kill the daemon).
        try await Task.sleep(for: .seconds(2))
        #expect(daemon.notify.count(of: "WATCHDOG=1") == pings)
        #expect(daemon.stderr.components(separatedBy: "The \(thread) thread has not turned").count == 2, "said once")
        await daemon.kill9()
        await room.value
    }
}
