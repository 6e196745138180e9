// State hooks from the outside: a real daemon runs a real shell script on each
// state change. The scripts report through a FIFO the test reads (LineFIFO), so
// the test awaits each run instead of sleeping; what they saw of the
// environment and stdin they leave in files.
import CTestProcess
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("State hooks run beside the voice path", .serialized, .timeLimit(.minutes(2)))
struct HookTests {
    func config(_ server: TestServer, hook: String, timeoutMs: Int = 5000, extra: [String: JSONValue] = [:]) -> JSONValue {
        var fields: [String: JSONValue] = [
            "name": "kitchen-pi", "room": "kitchen", "transport": "record",
            "server": ["url": .string(server.url), "retryMs": 2000],
            "audio": ["input": "testmic", "output": "testspeaker", "leadingSilenceMs": 1500],
            "hooks": ["onState": .string(hook), "timeoutMs": .number(Double(timeoutMs))],
        ]
        fields.merge(extra) { _, new in new }
        return .object(fields)
    }

    /// A folder for the hook's files, with the FIFO `runs.fifo` its runs report through.
    func folder() throws -> (URL, LineFIFO) {
        let dir = try Package.temporaryDirectory("hook")
        return (dir, try LineFIFO(path: dir.path + "/runs.fifo"))
    }

    /// Writes a shell script in `dir`, with `$D` standing for the folder, and returns the hook that runs it: `/bin/sh`
    /// with the script's path. Not the script itself: Foundation writes it through a descriptor without O_CLOEXEC, and a
    /// program this test process starts meanwhile on another thread holds a copy until its child closes it, so under
    /// load the hook's exec failed with ETXTBSY ("Text file busy") and that run never came. examples/hooks/led.sh,
    /// which no test writes, is run as the program itself (exampleLED).
    func script(_ dir: URL, _ body: String) throws -> String {
        let path = dir.appendingPathComponent("hook.sh").path
        try ("D='\(dir.path)'\n" + body).write(toFile: path, atomically: true, encoding: .utf8)
        return "/bin/sh \(path)"
    }

    /// Whether a process is alive (a zombie counts as gone: it has ended and only waits to be reaped).
    /// True once `pid` has ended (a zombie counts), false if it has not within `limit`: its pidfd
    /// becomes readable when it ends, a grandchild of this process as much as a child. The wait is
    /// on a thread of its own, never one of the pool's.
    static func gone(_ pid: Int32, within limit: Duration) async -> Bool {
        let pidfd = test_pidfd_open(pid)
        guard pidfd >= 0 else { return errno == ESRCH }
        let ms = Int32(limit.components.seconds * 1000 + limit.components.attoseconds / 1_000_000_000_000_000)
        return await withCheckedContinuation { done in
            Thread {
                var entry = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
                var result: Int32
                repeat { result = poll(&entry, 1, ms) } while result < 0 && errno == EINTR
                close(pidfd)
                done.resume(returning: result == 1)
            }.start()
        }
    }

    static func alive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return !stat[stat.index(close, offsetBy: 2)...].hasPrefix("Z")
    }

    @Test("the hook gets the state, the previous one, the room and the server's name, the event as JSON, and never the token")
    func environmentAndInput() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let (dir, runs) = try folder()
        defer { runs.stop() }
        let hook = try script(dir, """
            env > "$D/env-$PARLOUR_STATE"
            cat > "$D/stdin-$PARLOUR_STATE"
            printf '%s %s %s|%s\\n' "$PARLOUR_PREVIOUS_STATE" "$PARLOUR_STATE" "$#" "$1" > "$D/runs.fifo"
            """)
        let credentials = dir.appendingPathComponent("credentials").path
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        let envToken = "env-token-\(UUID().uuidString.prefix(8))"
        let daemon = try await DaemonHarness.start(
            config: config(server, hook: "\(hook) 'two words'"), token: server.token,
            environment: ["PARLOUR_TOKEN": envToken, "CREDENTIALS_DIRECTORY": credentials])
        var lines = runs.lines.makeAsyncIterator()
        // The first change: starting → idle, with the quoted argument as one word.
        #expect(await lines.next() == "starting idle 1|two words")

        let environment = try String(contentsOfFile: dir.path + "/env-idle", encoding: .utf8)
        let variables = Dictionary(environment.split(separator: "\n").compactMap { line -> (String, String)? in
            guard let equals = line.firstIndex(of: "=") else { return nil }
            return (String(line[..<equals]), String(line[line.index(after: equals)...]))
        }, uniquingKeysWith: { _, last in last })
        #expect(variables["PARLOUR_STATE"] == "idle")
        #expect(variables["PARLOUR_PREVIOUS_STATE"] == "starting")
        #expect(variables["PARLOUR_ROOM"] == "kitchen")
        #expect(variables["PARLOUR_SERVER_NAME"] == .some(server.host))
        #expect(variables["PARLOUR_SATELLITE_SOCKET"] == daemon.socket)
        #expect(variables["PATH"] != nil)
        #expect(variables["PARLOUR_TOKEN"] == nil)
        #expect(variables["CREDENTIALS_DIRECTORY"] == nil)
        #expect(variables["NOTIFY_SOCKET"] == nil)
        #expect(!environment.contains(envToken))
        #expect(!environment.contains(server.token))

        let input = try JSONValue.parse(Data(contentsOf: dir.appendingPathComponent("stdin-idle")))
        #expect(input["event"] == "state")
        #expect(input["state"] == "idle")
        #expect(input["previous"] == "starting")
        #expect(input["room"] == "kitchen")
        #expect(input["serverName"] == .string(server.host))
        #expect(input["v"] == 1)
        #expect(input["at"]?.stringValue?.hasSuffix("Z") == true)

        // A question makes two more changes; the hook hears of the last (and of thinking, unless it came
        // while the first run was still ending: then only the newest runs).
        #expect(try await daemon.result("ask", "what time is it")["status"] == "completed")
        var next = await lines.next()
        if next == "idle thinking 1|two words" { next = await lines.next() }
        #expect(next == "thinking idle 1|two words")
        #expect(await daemon.stop() == 0)
        #expect(daemon.stderr.contains("The state hook ran."))
        #expect(!daemon.stderr.contains(envToken))
    }

    @Test("a hook that hangs is stopped after hooks.timeoutMs with its whole group, and an answer does not wait for it")
    func hangingHook() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let (dir, runs) = try folder()
        defer { runs.stop() }
        // The first run ignores SIGTERM and waits on a child for ten minutes; later runs are quick.
        let hook = try script(dir, """
            if [ "$PARLOUR_PREVIOUS_STATE" = starting ]; then
                trap '' TERM
                sleep 600 &
                echo "hung $$ $!" > "$D/runs.fifo"
                wait
            fi
            echo "ran $PARLOUR_PREVIOUS_STATE $PARLOUR_STATE" > "$D/runs.fifo"
            """)
        let daemon = try await DaemonHarness.start(config: config(server, hook: hook, timeoutMs: 4000), token: server.token)
        let watcher = try await Watcher.start(daemon)
        var lines = runs.lines.makeAsyncIterator()
        let hung = try #require(await lines.next()?.split(separator: " "))
        #expect(hung.first == "hung")
        let shell = try #require(Int32(hung[1])), sleeper = try #require(Int32(hung[2]))

        // A round trip while the hook hangs: it completes, and the hook is still there afterwards.
        let asked = ContinuousClock.now
        let answer = try await daemon.result("ask", "are the lights off")
        let took = ContinuousClock.now - asked
        #expect(answer["status"] == "completed")
        #expect(Self.alive(shell), "the answer came \(took) after asking, and the hook was already gone")
        #expect(try await daemon.result("status")["response"]?["state"] == "idle")

        // SIGTERM is ignored, so SIGKILL 2 s later ends the hook and what it started.
        let stopped = await watcher.notice("ran longer than hooks.timeoutMs (4000 ms)")
        #expect(stopped?["message"]?.stringValue?.contains("SIGKILL") == true)
        #expect(stopped?["priority"] == "warning")
        #expect(stopped?["hookState"] == "idle")
        #expect(!Self.alive(shell))
        // The sleeper was killed with its group, but it is not the daemon's child and nothing
        // announces its end: under load its exit can trail the shell's by a moment.
        #expect(await Self.gone(sleeper, within: .seconds(5)))
        // The changes that came meanwhile were not lost: the newest ran next.
        #expect(await lines.next() == "ran thinking idle")
        #expect(await daemon.stop() == 0)
    }

    @Test("states that come faster than the hook runs: it runs for the first and the newest, not for each")
    func newestWins() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let (dir, runs) = try folder()
        defer { runs.stop() }
        let gate = dir.path + "/gate.fifo"
        #expect(mkfifo(gate, 0o600) == 0)
        // The first run waits at the gate until the test opens it.
        let hook = try script(dir, """
            echo "$PARLOUR_PREVIOUS_STATE $PARLOUR_STATE" > "$D/runs.fifo"
            [ -e "$D/open" ] || read line < "$D/gate.fifo"
            """)
        let daemon = try await DaemonHarness.start(config: config(server, hook: hook, timeoutMs: 60000), token: server.token,
                                                   mic: Speech.silence(4))
        let watcher = try SocketClient(path: daemon.socket)
        await watcher.watch()
        var lines = runs.lines.makeAsyncIterator()
        #expect(await lines.next() == "starting idle")

        // While the first run waits: idle → thinking → idle, then idle → listening.
        #expect(try await daemon.result("ask", "what time is it")["status"] == "completed")
        let listen = Task { try await daemon.result("listen") }
        _ = await watcher.state("listening")
        _ = FileManager.default.createFile(atPath: dir.path + "/open", contents: nil)
        let opener = open(gate, O_RDWR)
        #expect(opener >= 0)
        _ = write(opener, "go\n", 3)
        close(opener)

        // The next run is told the newest state, with its own previous one; thinking never ran.
        #expect(await lines.next() == "idle listening")
        #expect(try await listen.value["reason"] == "nothing_heard")
        #expect(await lines.next() == "listening idle")
        #expect(await daemon.stop() == 0)
    }

    @Test("the example LED hook shows each state through sysfs files")
    func exampleLED() async throws {
        let server = try await TestServer.start(knobs: ["delayMs": 3000])
        defer { server.stop() }
        // A stand-in for /sys/class/leds/test0.
        let root = try Package.temporaryDirectory("leds")
        let led = root.appendingPathComponent("test0")
        try FileManager.default.createDirectory(at: led, withIntermediateDirectories: true)
        for (file, value) in [("trigger", "none"), ("brightness", "0"), ("max_brightness", "255"), ("delay_on", "500"), ("delay_off", "500")] {
            try "\(value)\n".write(to: led.appendingPathComponent(file), atomically: true, encoding: .utf8)
        }
        func read(_ file: String) -> String? {
            (try? String(contentsOf: led.appendingPathComponent(file), encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let script = Package.root.appendingPathComponent("examples/hooks/led.sh").path
        let daemon = try await DaemonHarness.start(config: config(server, hook: "\(script) test0"), token: server.token,
                                                   environment: ["PARLOUR_LED_ROOT": root.path])
        let watcher = try await Watcher.start(daemon)
        let asked = Task { try await daemon.result("ask", "is it raining") }
        // The run for idle may have ended before the watch began; thinking's comes after it.
        let ran = await watcher.client.next { $0["message"] == "The state hook ran." && $0["hookState"] == "thinking" }
        #expect(ran?["exitStatus"] == "0")
        #expect(read("trigger") == "timer")
        #expect(read("delay_on") == "100")
        #expect(read("delay_off") == "100")
        _ = try await asked.value
        _ = await watcher.client.next { $0["message"] == "The state hook ran." && $0["hookState"] == "idle" }
        #expect(read("trigger") == "none")
        #expect(read("brightness") == "0")
        #expect(await daemon.stop() == 0)
    }

    @Test("a hook whose program is missing stops the start, naming hooks.onState")
    func missingProgram() async throws {
        let dir = try Package.temporaryDirectory("hook")
        let file = dir.appendingPathComponent("satellite.json").path
        try #"{"hooks": {"onState": "/nonexistent/led.sh led0"}}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let done = try await Subprocess.run(Package.binDirectory + "/parlour-satellite",
                                            ["--config", file, "--state-dir", dir.path, "--socket", dir.path + "/c.sock"])
        #expect(done.status == 78)
        #expect(done.err.contains("\(file): hooks.onState:"))
        #expect(done.err.contains("/nonexistent/led.sh does not exist"))
    }
}
