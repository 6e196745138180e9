// The control socket cannot be starved: requests on one connection in the
// order they came, a flood of idle clients under a small descriptor limit,
// and a client that connects and says nothing.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("the control socket cannot be starved", .serialized, .timeLimit(.minutes(3)))
struct ControlLoopTests {
    static func config(_ server: TestServer) -> JSONValue {
        ["name": "study", "transport": "record", "server": ["url": .string(server.url)],
         "audio": ["input": "testmic", "output": "testspeaker", "leadingSilenceMs": 20000, "maxUtteranceMs": 30000]]
    }

    @Test("an end sent right behind its listen on the same connection always finds the hold")
    func endAfterListen() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server), token: server.token, mic: Speech.silence(60))
        // Every client is kept to the end: a SocketClient closed while its reader thread still reads would let
        // that thread take the next client's lines when the kernel hands the next socket the same number.
        var clients: [SocketClient] = []
        for round in 1...8 {
            let client = try SocketClient(path: daemon.socket)
            clients.append(client)
            // One write: the daemon reads both lines at once, as it does from parlourctl listen --hold fed by a pipe.
            client.send(ControlProtocol.encode(.listen(hold: true), id: "l") + "\n" + ControlProtocol.encode(.end, id: "e") + "\n")
            let end = await client.result("e")
            #expect(end?["response"]?["released"] == true, "round \(round): \(String(describing: end))")
            let listen = await client.result("l")
            #expect(listen?["status"] != nil, "round \(round): the listen has its one result")
        }
        #expect(await daemon.stop() == 0)
    }

    @Test("1,500 idle clients under a 1,024 descriptor limit: the over-cap are told why, and status and ask still answer")
    func flood() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server), token: server.token, mic: Speech.silence(1))
        let limited = try await Subprocess.run("/usr/bin/prlimit", ["--pid", String(daemon.pid), "--nofile=1024:1024"],
                                               environment: daemon.environment)
        #expect(limited.status == 0, "\(limited.err)")
        // A process of its own holds the clients, not this one (Tests/Fixtures/control_flood.py says why).
        let flood = Process()
        flood.executableURL = URL(fileURLWithPath: Package.python)
        flood.arguments = [Package.root.appendingPathComponent("Tests/Fixtures/control_flood.py").path, daemon.socket, "1500"]
        let (input, output) = (Pipe(), Pipe())
        flood.standardInput = input
        flood.standardOutput = output
        try flood.run()
        TestChildren.tie(flood)
        defer { kill(flood.processIdentifier, SIGKILL) }
        let reading = output.fileHandleForReading.fileDescriptor
        let connected = try await OwnThread.run { Self.lines(from: reading, until: "ready") }
        try #require(connected.last == "ready", "the flood's clients could not all connect: \(connected)")

        // Asked after the flood, while every client that kept its place still holds it.
        let status = try await daemon.result("status")
        #expect(status["status"] == "completed", "\(status)")
        let asked = try await daemon.result("ask", "are you still there?")
        #expect(asked["status"] == "completed", "\(asked)")

        // Those that lost their place were told why, in one error result each.
        input.fileHandleForWriting.write(Data("collect\n".utf8))
        let sent = try await OwnThread.run { Self.lines(from: reading, until: "done") }
        try #require(sent.last == "done", "the flood ended early: \(sent)")
        var told = 0
        for line in sent.dropLast() {
            let result = try JSONValue.parse(line)
            // Over a cap, or (on a slow machine, where the flood takes longer than 10 s) idle too long.
            let message = result["message"]?.stringValue ?? ""
            #expect(result["error"] == "daemon_unavailable"
                && (message.contains("its most") || message.contains("No request arrived within")), "\(line)")
            told += 1
        }
        #expect(told >= 1500 - ControlLimits().perUID, "told why: \(told)")
        let threads = (try? String(contentsOfFile: "/proc/\(daemon.pid)/status", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("Threads:") }.flatMap { Int($0.dropFirst(8).trimmed()) } ?? 0
        #expect(threads > 0 && threads < 64, "no thread per connection: \(threads) threads")
        #expect(daemon.openFiles.count <= 1024)
        #expect(daemon.isRunning)
        #expect(await daemon.stop() == 0)
    }

    /// Lines read from `fd` until one is `last` (included) or the end.
    private static func lines(from fd: Int32, until last: String) -> [String] {
        var lines: [String] = []
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while lines.last != last {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: pending[..<newline], as: UTF8.self))
                pending.removeSubrange(...newline)
                continue
            }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            pending += buffer[..<n]
        }
        return lines
    }

    @Test("a connection that sends no complete line is told so and closed after the idle timeout")
    func idle() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server), token: server.token, mic: Speech.silence(1))
        let quiet = try SocketClient(path: daemon.socket)
        quiet.send("{\"v\": 1, \"id\": \"half")  // half a line, never finished
        let watcher = try SocketClient(path: daemon.socket)
        await watcher.watch()
        let told = await quiet.next { $0["status"] == "error" }
        #expect(told?["error"] == "daemon_unavailable")
        #expect(told?["message"]?.stringValue?.contains("No request arrived within 10 s") == true, "\(String(describing: told))")
        #expect(await quiet.rest().isEmpty, "then the connection closed")
        // A watch, which has sent its line, is not idle: it still streams.
        #expect(try await daemon.result("status")["status"] == "completed")
        watcher.request(.status, id: "s")
        #expect(await watcher.result("s")?["status"] == "completed")
        #expect(await daemon.stop() == 0)
    }
}
