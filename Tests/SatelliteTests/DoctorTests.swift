// `parlourctl doctor` and the `meter` command from the outside: a real daemon on
// file-backed ALSA devices (a flat microphone and a speaking one, and one the
// /listen stream holds), the project's test server refusing the token, an
// unpaired satellite, and a state folder on a read-only mount.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("doctor", .serialized, .timeLimit(.minutes(2)))
struct DoctorTests {
    static let config: JSONValue = ["name": "study-pi", "transport": "record", "server": ["retryMs": 2000],
                                    "audio": ["input": "testmic", "output": "testspeaker"]]

    /// The checks of `parlourctl --json doctor`, by name, and the exit code of the human form.
    static func doctor(_ daemon: DaemonHarness) async throws -> (checks: [String: DoctorCheck], names: [String], exit: Int32) {
        let result = try await daemon.result("doctor")
        #expect(result["status"] == "completed")
        let report = DoctorReport(json: result["response"] ?? .null)
        let human = try await daemon.ctl("doctor")
        return (Dictionary(uniqueKeysWithValues: report.checks.map { ($0.name.rawValue, $0) }), report.checks.map(\.name.rawValue),
                human.status)
    }

    @Test("a flat microphone fails the check with the mixer fix; a speaking one passes; names and order are stable")
    func flatAndSpeaking() async throws {
        let flat = try await DaemonHarness.start(config: Self.config, mic: Speech.silence(3))
        let (checks, names, exit) = try await Self.doctor(flat)
        // The wake word's two come only with wake local.
        #expect(names == DoctorCheck.Name.allCases.map(\.rawValue).filter { !$0.hasPrefix("wake_word") })
        let microphone = try #require(checks["microphone"])
        #expect(microphone.status == .fail)
        #expect(microphone.detail.contains("gives only zeros (digital silence) over 1.0 s"), "\(microphone.detail)")
        #expect(microphone.fix == "alsamixer -V capture   # unmute the capture (M) and set its level")
        #expect(checks["speaker"]?.status == .ok)
        #expect(checks["clock"]?.status == .ok)
        #expect(checks["state_folder"]?.status == .ok)
        #expect(checks["socket"]?.status != .fail)
        #expect(exit == 1, "a failed check exits 1")

        // The human form: a mark a line, the fix under it; ASCII marks outside UTF-8.
        var environment = flat.environment
        environment["LANG"] = "C"
        environment.removeValue(forKey: "LC_ALL")
        environment.removeValue(forKey: "LC_CTYPE")
        let plain = try await Subprocess.run(Package.binDirectory + "/parlourctl", ["doctor"], environment: environment)
        #expect(plain.status == 1)
        #expect(plain.out.contains("x microphone     "))
        #expect(plain.out.contains("\n                     fix: alsamixer -V capture"))
        // Nothing was left behind in the state folder.
        #expect(try FileManager.default.contentsOfDirectory(atPath: flat.stateDirectory).isEmpty)
        await flat.stop()

        let speaking = try await DaemonHarness.start(
            config: Self.config, mic: try await Speech.raw("turn off the kitchen lights", before: 0.1, after: 1))
        let heard = try await Self.doctor(speaking).checks["microphone"]
        #expect(heard?.status == .ok)
        #expect(heard?.detail.hasPrefix("\(Self.device(speaking)) hears a signal: RMS ") == true, "\(heard?.detail ?? "")")
        #expect(heard?.fix == nil)
        await speaking.stop()
    }

    @Test("a microphone stuck at one value fails, whatever the noise suppressor makes of it")
    func stuck() async throws {
        // Processing on, as by default: the suppressor turns a constant into quiet noise, and doctor
        // reads what the microphone gave.
        let config: JSONValue = ["name": "study-pi", "transport": "record", "server": ["retryMs": 2000],
                                 "audio": ["input": "testmic", "output": "testspeaker", "noiseSuppression": true, "echoCancel": true]]
        let stuck = [Int16](repeating: 1000, count: 3 * 16000)
        let daemon = try await DaemonHarness.start(config: config, mic: stuck.withUnsafeBytes { Data($0) })
        let microphone = try #require(try await Self.doctor(daemon).checks["microphone"])
        #expect(microphone.status == .fail)
        #expect(microphone.detail.contains("gives the same value (1000) in every sample"), "\(microphone.detail)")
        await daemon.stop()
    }

    /// The microphone's device name as the daemon was given it.
    static func device(_ daemon: DaemonHarness) -> String {
        (try? ALSAFixture.shared().microphone(infile: daemon.room?.path ?? daemon.micFile.path)) ?? "?"
    }

    @Test("while the /listen stream holds the microphone, doctor listens in without taking it")
    func listensIn() async throws {
        let server = try await TestServer.start(knobs: ["wake": "never"])
        defer { server.stop() }
        let config: JSONValue = ["transport": "stream", "wake": "server", "server": ["url": .string(server.url)],
                                 "audio": ["input": "testmic", "output": "testspeaker"]]
        let daemon = try await DaemonHarness.start(config: config, token: server.token, fifoMic: true)
        let watcher = try SocketClient(path: daemon.socket)
        if await watcher.watch()?["status"]?["state"] != "idle" { _ = await watcher.state("idle") }
        // The room speaks for longer than doctor listens.
        daemon.room?.say(try await Speech.raw("turn off the kitchen lights and then the hall", before: 0, after: 0))

        func frames() async throws -> Int {
            try await server.socketLog().filter { $0["dir"] == "in" && $0["kind"] == "binary" }.count
        }
        let before = try await frames()
        let microphone = try await Self.doctor(daemon).checks["microphone"]
        let after = try await frames()
        #expect(microphone?.status == .ok, "\(microphone?.detail ?? "")")
        // About one second passed, 80 ms a message: the stream went on while doctor listened.
        #expect(after - before >= 10, "\(after - before) messages went up meanwhile")
        #expect(try await server.requests().filter { $0["path"] == "/listen" }.count == 1, "the stream was never dropped")
        #expect(try await Self.doctor(daemon).checks["token"]?.status == .ok)
        await daemon.stop()
    }

    @Test("a pinned server that refuses the token fails the token check with the pair fix")
    func refusedToken() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config, token: server.token, mic: Speech.silence(1))
        #expect(try await daemon.ctl("use", server.url).status == 0)
        var checks = try await Self.doctor(daemon).checks
        #expect(checks["token"]?.status == .ok)
        #expect(checks["server_pinned"]?.detail == "127.0.0.1 at \(server.url), pinned (manual).")

        try await server.setKnobs(["refuseToken": true])
        checks = try await Self.doctor(daemon).checks
        let token = try #require(checks["token"])
        #expect(token.status == .fail)
        #expect(token.detail == "\(server.url) refused the token (from \(daemon.stateDirectory)/token (the state folder)).")
        #expect(token.fix == "parlourctl pair LINK   # run parlour pair on the server for the link")
        #expect(checks["server_pinned"]?.status == .ok)
        // What doctor learned is what status says.
        #expect(try await daemon.result("status")["response"]?["server"]?["tokenAccepted"] == false)
        #expect(!daemon.stderr.contains(server.token))
        await daemon.stop()
    }

    @Test("an unpaired satellite fails the pin and the token, each with the pair fix")
    func unpaired() async throws {
        let daemon = try await DaemonHarness.start(config: Self.config, mic: Speech.silence(1))
        let (checks, _, exit) = try await Self.doctor(daemon)
        #expect(checks["server_pinned"] == DoctorCheck(.serverPinned, .fail, "No server is pinned, so the satellite has nobody to talk to.",
                                                       fix: "parlourctl pair LINK   # run parlour pair on the server for the link"))
        #expect(checks["token"]?.status == .fail)
        #expect(checks["token"]?.fix == DoctorRules.pairFix)
        #expect(exit == 1)
        await daemon.stop()
    }

    @Test("a state folder on a read-only mount fails, and says so")
    func readOnlyStateFolder() async throws {
        // Root writes anywhere the modes say it may not: only a read-only mount stops it. The mount is
        // made inside scripts/netns-run's private mount namespace, so nothing outside sees it.
        guard ProcessInfo.processInfo.environment["PARLOUR_TEST_AVAHI"] == "1" else {
            throw TestFailure("this test mounts a file system: run it inside scripts/netns-run")
        }
        let daemon = try await DaemonHarness.start(config: Self.config, mic: Speech.silence(1))
        let state = daemon.stateDirectory
        try await Subprocess.check("/usr/bin/mount", ["--bind", state, state])
        do {
            try await Subprocess.check("/usr/bin/mount", ["-o", "remount,bind,ro", state])
            let folder = try await Self.doctor(daemon).checks["state_folder"]
            #expect(folder?.status == .fail)
            #expect(folder?.detail == "\(state) cannot be written (Read-only file system), so pairing and token set would fail.")
            #expect(folder?.fix?.hasPrefix("findmnt -T \(state)   #") == true)
        } catch {
            Issue.record(error)
        }
        try await Subprocess.check("/usr/bin/umount", [state])
        #expect(try await Self.doctor(daemon).checks["state_folder"]?.status == .ok)
        await daemon.stop()
    }

    @Test("muted, doctor leaves the microphone closed and says how to unmute; meter answers muted")
    func muted() async throws {
        let daemon = try await DaemonHarness.start(config: Self.config, mic: try await Speech.raw("hello there", before: 0, after: 1))
        #expect(try await daemon.ctl("mute").status == 0)
        let microphone = try await Self.doctor(daemon).checks["microphone"]
        #expect(microphone == DoctorCheck(.microphone, .warn, "The satellite is muted, so the microphone was left closed and not tried.",
                                          fix: "parlourctl unmute"))
        let client = try SocketClient(path: daemon.socket)
        client.request(.meter(seconds: 1), id: "m")
        #expect(await client.result("m")?["error"] == "muted")
        #expect(try await daemon.ctl("unmute").status == 0)
        #expect(try await Self.doctor(daemon).checks["microphone"]?.status == .ok)
        await daemon.stop()
    }

    @Test("meter sends a level every 100 ms and then the levels of the whole stretch")
    func meter() async throws {
        let daemon = try await DaemonHarness.start(
            config: Self.config, mic: try await Speech.raw("turn off the kitchen lights", before: 0.5, after: 1))
        let client = try SocketClient(path: daemon.socket)
        client.send(#"{"v": 1, "id": "m", "cmd": "meter", "seconds": 2}"# + "\n")
        var levels: [Double] = []
        var result: JSONValue?
        for await line in client.lines {
            guard let value = try? JSONValue.parse(line) else { continue }
            if value["event"] == "level", let rms = value["rms"]?.numberValue { levels.append(rms) }
            if value["id"] == "m" {
                result = value
                break
            }
        }
        #expect(levels.count == 20)
        #expect(levels.first == SignalLevel.floorDBFS, "it starts in silence")
        #expect((levels.max() ?? -100) > -40, "then it hears the speech: \(levels)")
        #expect(result?["status"] == "completed")
        #expect(result?["response"]?["seconds"] == 2.0)
        #expect(result?["response"]?["signal"] == "ok")

        client.send(#"{"v": 1, "id": "bad", "cmd": "meter", "seconds": 31}"# + "\n")
        #expect(await client.result("bad")?["error"] == "invalid_request")
        await daemon.stop()
    }
}
