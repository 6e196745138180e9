// The wall clock of a running daemon jumps by years, as a Raspberry Pi's does
// when NTP sets it after a boot at 1970 or at a saved time (FakeWallClock moves
// it, for the daemon alone). Nothing that measures a duration may notice: turns,
// the /listen socket's pings and the back-off go on. What carries the wall time
// (doctor's clock) says what the clock says. An https server checked by its
// certificate before the clock is set is refused for the clock, not as untrusted,
// and works once the clock is set; one pinned by its key works at any time.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("The wall clock jumps under a running daemon", .serialized, .timeLimit(.minutes(3)))
struct WallClockTests {
    static let fiveYears = 5 * 365 * 86_400

    static func checks(_ daemon: DaemonHarness) async throws -> [String: DoctorCheck] {
        let report = DoctorReport(json: try await daemon.result("doctor")["response"] ?? .null)
        return Dictionary(uniqueKeysWithValues: report.checks.map { ($0.name.rawValue, $0) })
    }

    /// A push turn on the open socket, said into the room.
    static func turn(_ daemon: DaemonHarness, _ watcher: SocketClient) async throws -> JSONValue {
        let listen = Task { try await daemon.result("listen") }
        _ = await watcher.state("listening")
        daemon.room?.say(try await Speech.raw(StreamTests.question, before: 0.3, after: 1.5))
        return try await listen.value
    }

    @Test("forward five years, back to 1970, forward again: turns, pings and the back-off go on, and doctor shows each date")
    func jumps() async throws {
        let dir = try Package.temporaryDirectory("wallclock")
        let clock = try FakeWallClock(in: dir, "+0")
        let server = try await TestServer.start(knobs: ["audioMs": 800, "replyText": "Done.", "restartDownMs": 100])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: StreamTests().config(server, wake: "push"), token: server.token,
                                                   fifoMic: true, environment: clock.environment)
        let watcher = try await StreamTests().connectedWatch(daemon)
        let thisYear = String(WallTime.now().iso8601.prefix(4))
        #expect(try await Self.checks(daemon)["clock"]?.detail.contains("says \(thisYear)-") == true, "libfaketime reads the true time")
        for (spec, year) in [("+\(Self.fiveYears)", String(Int(thisYear)! + 5)), ("@1970-01-02 00:00:00", "1970"), ("+0", thisYear)] {
            try clock.set(spec)
            let shown = try await Self.checks(daemon)["clock"]
            #expect(shown?.detail.contains("says \(year)-") == true, "\(spec): \(String(describing: shown))")
            let result = try await Self.turn(daemon, watcher)
            #expect(result["status"] == "completed", "a turn after the jump to \(year): \(result)")
        }
        // Back to 1970 with the server restarting: the socket comes back after the back-off's first second.
        try clock.set("@1970-01-02 00:00:00")
        try await server.restart()
        let gone = await StreamTests().notice(watcher, "Disconnected")
        #expect(gone?["retryMs"] == "1000")
        #expect(await StreamTests().notice(watcher, "Connected") != nil)
        let after = try await Self.turn(daemon, watcher)
        #expect(after["status"] == "completed", "\(after)")
        // The socket stayed open through every jump: one open before the restart, one after.
        #expect(StreamTests.events(try await server.socketLog(), "open").count == 2)
        #expect(await daemon.stop() == 0)
    }

    @Test("an https server checked by its certificate, with the clock behind: refused for the clock; set, it works")
    func certificateBeforeTheClockIsSet() async throws {
        let dir = try Package.temporaryDirectory("wallclock")
        // Valid from now on: two hours behind, the daemon's clock is past its build but before the certificate.
        let cert = dir.appendingPathComponent("cert.pem").path, key = dir.appendingPathComponent("key.pem").path
        try await Subprocess.check("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                        "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                                                        "-keyout", key, "-out", cert])
        let server = try await TestServer.start(tls: TestCertificate(certificate: cert, privateKey: key, key: ""))
        defer { server.stop() }
        let clock = try FakeWallClock(in: dir, "-7200")
        var environment = clock.environment
        environment["SSL_CERT_FILE"] = cert  // the certificate is its own authority
        let config: JSONValue = ["name": "hall-pi", "transport": "stream", "wake": "push",
                                 "server": ["url": .string(server.url), "retryMs": 1000], "audio": ["input": "testmic", "output": "testspeaker"]]
        let daemon = try await DaemonHarness.start(config: config, token: server.token, environment: environment)
        let watch = try await Watcher.start(daemon)

        let refused = try await daemon.result("ask", "are you there")
        #expect(refused["error"] == "server_refused", "\(refused)")
        let message = refused["message"]?.stringValue ?? ""
        #expect(message.hasPrefix(ServerAnswers.clockWrongLead) && message.contains("timedatectl set-ntp true"), "\(message)")
        #expect(!message.contains("trust"), "not that the server is untrusted: \(message)")
        let stream = await watch.notice("Disconnected from the server's /listen", ServerAnswers.clockWrongLead)
        #expect(stream != nil)
        let found = try await Self.checks(daemon)
        #expect(found["clock"]?.status == .fail)
        #expect(found["clock"]?.detail.contains("not valid yet") == true, "\(String(describing: found["clock"]))")
        #expect(found["clock"]?.fix?.contains("timedatectl set-ntp true") == true)
        #expect(try await server.requests().filter { $0["credential"] != .null }.isEmpty, "nothing went with the token")

        // At 1970 doctor says so by the date alone.
        try clock.set("@1970-01-02 00:00:00")
        #expect(try await Self.checks(daemon)["clock"]?.detail.contains("before 2024") == true)

        // NTP sets the clock: the socket opens by itself, and the server answers.
        try clock.set("+0")
        #expect(await watch.notice("Connected to the server's /listen") != nil)
        #expect(try await daemon.result("ask", "are you there")["status"] == "completed")
        #expect(try await Self.checks(daemon)["clock"]?.status == .ok)
        #expect(await daemon.stop() == 0)
    }

    @Test("a server pinned by its key works at 1970 and five years on")
    func pinnedKeyAtAnyTime() async throws {
        let dir = try Package.temporaryDirectory("wallclock")
        let certificate = try TestCertificate.make()
        let server = try await TestServer.start(tls: certificate)
        defer { server.stop() }
        let clock = try FakeWallClock(in: dir, "@1970-01-02 00:00:00")
        let config: JSONValue = ["name": "hall-pi", "transport": "stream", "wake": "push", "server": ["retryMs": 1000],
                                 "audio": ["input": "testmic", "output": "testspeaker"]]
        let daemon = try await DaemonHarness.start(config: config, token: server.token, environment: clock.environment)
        let watch = try await Watcher.start(daemon)
        let used = try await daemon.ctl("use", "--yes", server.url)
        #expect(used.status == 0, "\(used.out) \(used.err)")
        #expect(try ServerKeyTests.pinFile(daemon).key == certificate.key)
        #expect(try ServerKeyTests.pinFile(daemon).pinnedAt.iso8601.hasPrefix("1970-"), "pinnedAt is the clock's, as it was")
        #expect(await watch.notice("Connected to the server's /listen") != nil)
        #expect(try await daemon.result("ask", "are you there")["status"] == "completed")
        try clock.set("+\(Self.fiveYears)")
        #expect(try await daemon.result("ask", "are you there")["status"] == "completed")
        #expect(await daemon.stop() == 0)
    }
}
