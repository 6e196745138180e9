// The daemon on a machine that has been up a long time: each path that reads a
// clock, run as its own test runs it, but with the daemon in a time namespace
// (DaemonHarness.uptime) whose CLOCK_MONOTONIC and CLOCK_BOOTTIME start past a
// threshold: nanoseconds times 16 kHz pass Int64 at 6.7 days, milliseconds pass
// Int32 at 24.9 days and UInt32 at 49.7 days, and three years is far past all.
// Every path runs at 8 days and at 3 years; the path that reads the most clocks
// (an answer in a room that echoes, the canceller's timeline, the wake word over
// it) runs at 25 and 50 days and 100 years too. More would only add minutes to CI
// (every path passed at 100 years when tried): the clocks' arithmetic at every
// extreme is MonotonicClockTests' and the decoders' own.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("The daemon at any uptime", .serialized, .timeLimit(.minutes(6)))
struct UptimeTests {
    static let day = 86_400
    static let uptimes = [8 * day, 3 * 365 * day]

    enum Path: String, CaseIterable, CustomTestStringConvertible {
        case localWake, pushTurn, recordTurn, answerInEchoingRoomAndWakeOverIt, streamWithServerWake, backoff, watchdog
        var testDescription: String { rawValue }
    }

    static func run(_ path: Path) async throws {
        switch path {
        case .localWake: try await WakeWordTests().wakeAndTurn(transport: "stream")
        case .pushTurn: try await StreamTests().pushRoundTrip()
        case .recordTurn: try await WakeWordTests().wakeAndTurn(transport: "record")
        case .answerInEchoingRoomAndWakeOverIt: try await EchoCancelTests().wakeOverAnswer()
        case .streamWithServerWake: try await StreamTests().bargeIn()
        case .backoff: try await StreamTests().growingBackoff()
        case .watchdog: try await watchdog()
        }
    }

    @Test("every path that reads a clock, at 8 days and 3 years up", arguments: uptimes, Path.allCases)
    func everyPath(uptime: Int, path: Path) async throws {
        try await DaemonHarness.$uptime.withValue(uptime) { try await Self.run(path) }
    }

    @Test("the answer in a room that echoes and the wake word over it, at 25 and 50 days and 100 years up",
          arguments: [25 * day, 50 * day, 100 * 365 * day])
    func echoingRoom(uptime: Int) async throws {
        try await DaemonHarness.$uptime.withValue(uptime) { try await Self.run(.answerInEchoingRoomAndWakeOverIt) }
    }

    @Test("a watchdog interval past Int64's microseconds (systemd takes any short of UInt64.max) is for ever, not a trap")
    func watchdogForEver() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: StreamTests().config(server, wake: "push"), token: server.token,
                                                   environment: ["WATCHDOG_USEC": String(UInt64.max - 1)])
        #expect(try await daemon.result("status")["status"] == "completed")
        #expect(await daemon.stop() == 0)
    }

    /// WATCHDOG=1 keeps coming, through a push turn, from a daemon that sees the uptime asked for.
    static func watchdog() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 800, "replyText": "Done."])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: StreamTests().config(server, wake: "push"), token: server.token,
                                                   fifoMic: true, environment: ["WATCHDOG_USEC": "400000"])
        if let uptime = DaemonHarness.uptime {
            let offsets = try String(contentsOfFile: "/proc/\(daemon.pid)/timens_offsets", encoding: .utf8)
            let fields = offsets.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            #expect(fields.contains(["monotonic", String(uptime), "0"]) && fields.contains(["boottime", String(uptime), "0"]), "\(offsets)")
        }
        await daemon.notify.wait(for: "WATCHDOG=1")
        let watcher = try await StreamTests().connectedWatch(daemon)
        let listen = Task { try await daemon.result("listen") }
        _ = await watcher.state("listening")
        daemon.room?.say(try await Speech.raw(StreamTests.question, before: 0.3, after: 1.5))
        #expect(try await listen.value["status"] == "completed")
        // A turn takes seconds, and the pings come every 200 ms.
        #expect(daemon.notify.messages.filter { $0 == "WATCHDOG=1" }.count >= 3)
        #expect(await daemon.stop() == 0)
    }
}
