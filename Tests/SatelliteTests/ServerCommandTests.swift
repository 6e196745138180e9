// `parlourctl server ...` from the outside: a real daemon, the project's test
// server with its /admin routes, and the parlourctl binary for the words and
// the exit codes. Easy to get wrong here: a refused value must never reach the
// server, the server's refusals must arrive in its own words, a slow model
// start must not stop the daemon answering, and the token must go to the
// pinned server alone.
import Foundation
import Testing
import SatelliteCore

@Suite("parlourctl server, through the daemon to the pinned server", .serialized, .timeLimit(.minutes(3)))
struct ServerCommandTests {
    static func config(_ server: TestServer?) -> JSONValue {
        var config: JSONValue = ["name": "study-pi", "transport": "record", "server": ["retryMs": 2000],
                                 "audio": ["input": "testmic", "output": "testspeaker"]]
        if let server, case .object(var fields) = config {
            fields["server"] = ["url": .string(server.url), "retryMs": 2000]
            config = .object(fields)
        }
        return config
    }

    /// parlourctl with these arguments against `daemon`.
    static func ctl(_ daemon: DaemonHarness, _ arguments: [String]) async throws -> Finished {
        try await Subprocess.run(Package.binDirectory + "/parlourctl", arguments, environment: daemon.environment)
    }

    /// The /admin requests the server saw, oldest first.
    static func adminRequests(_ server: TestServer) async throws -> [JSONValue] {
        try await server.requests().filter { $0["path"]?.stringValue?.hasPrefix("/admin") == true }
    }

    @Test("server status prints version, restart, both pipelines, each model server and memory; --json the result object")
    func status() async throws {
        let server = try await TestServer.start(knobs: [
            "restartManual": true,
            "adminServices": ["whisper": ["installed": false, "running": false, "pid": nil, "lastExit": 1]],
        ])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server), token: server.token)
        // A change the agent cannot restart for: saved and in force differ until it restarts.
        #expect(try await daemon.ctl("server", "pipeline", "--concurrency", "3").status == 0)

        let done = try await daemon.ctl("server", "status")
        #expect(done.status == 0, "\(done.err)")
        #expect(done.out == """
            Parlour:    0.1.0, role server
            Restart:    manual: the agent was started in a terminal and would not come back by itself
            In force:   concurrency 2, queue depth 2, max tasks 3, timeout 45 s, triage auto
            Saved:      concurrency 3, queue depth 2, max tasks 3, timeout 45 s, triage auto
                        (differs from the one in force until the agent restarts)
            llm:        running, pid 4242 (the local model)
            whisper:    not installed as a service on the server (whisper, kept warm)
            Memory:     7.4 GB free of 16 GB

            """)

        let result = try await daemon.result("server", "status")
        #expect(result["status"] == "completed")
        let response = try #require(result["response"])
        #expect(response["version"] == "0.1.0" && response["role"] == "server" && response["restart"] == "manual")
        #expect(response["pipeline"]?["concurrency"] == 2 && response["saved"]?["concurrency"] == 3)
        #expect(response["services"]?.arrayValue?.map { $0["name"] } == ["llm", "whisper"])
        #expect(response["services"]?.arrayValue?.last?["lastExit"] == 1)
        #expect(response["memory"] == ["totalGb": 16, "freeGb": 7.4])
        #expect(await daemon.stop() == 0)
    }

    @Test("start, restart, doctor, logs and restart-agent each print their sentence and --json their result")
    func eachCommand() async throws {
        let server = try await TestServer.start(knobs: ["restartDelayMs": 60000])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server), token: server.token)

        let started = try await daemon.ctl("server", "start", "llm")
        #expect(started.status == 0, "\(started.err)")
        #expect(started.out == "llm (the local model) is now running, pid 4243.\n")
        let restarted = try await daemon.result("server", "restart", "whisper")
        #expect(restarted["response"]?["action"] == "restart")
        #expect(restarted["response"]?["service"]?["running"] == true && restarted["response"]?["service"]?["pid"] == 4244)

        let doctor = try await daemon.ctl("server", "doctor")
        #expect(doctor.status == 0)
        #expect(doctor.out.hasPrefix("[ ok ] config   config.json reads and is valid\n"))
        #expect(doctor.out.contains("[warn] memory   7.4 GB free of 16 GB\n"))
        #expect(doctor.out.hasSuffix("Nothing is broken, 1 warning.\n"))
        let checks = try await daemon.result("server", "doctor")["response"]?["checks"]?.arrayValue ?? []
        #expect(checks.map { $0["status"] } == ["ok", "ok", "ok", "warn"])

        let logs = try await daemon.ctl("server", "logs", "whisper", "--lines", "2")
        #expect(logs.status == 0)
        #expect(logs.out == "2025-11-30T01:00:00Z whisper: test line 1\n2025-11-30T01:00:01Z whisper: test line 2\n")
        let agentLog = try await daemon.result("server", "logs", "agent")["response"]
        #expect(agentLog?["service"] == "agent" && agentLog?["lines"]?.arrayValue?.count == 50)
        let logQueries = try await Self.adminRequests(server).filter { $0["path"] == "/admin/logs" }.map { $0["query"] }
        #expect(logQueries == [["service": "whisper", "lines": "2"], ["service": "agent"]])

        let restart = try await daemon.ctl("server", "restart-agent")
        #expect(restart.status == 0)
        #expect(restart.out == "The server's agent is restarting; the house stops answering for a few seconds.\n")

        let actions = try await Self.adminRequests(server).filter { $0["path"] == "/admin/service" }.map { [$0["service"], $0["action"]] }
        #expect(actions == [["llm", "start"], ["whisper", "restart"]])
        #expect(await daemon.stop() == 0)
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        let knobs: JSONValue
        /// Run first, when the refusal needs something done before (a repeat, a pending restart).
        var first: [String]? = nil
        let command: [String]
        let error: String
        /// The message, or its start when `prefix`.
        let message: String
        var prefix = false
        var testDescription: String { "\(command.joined(separator: " ")) \(knobs.text)" }
    }

    static let refusals: [Refusal] = [
        Refusal(knobs: ["status": 400, "errorText": "concurrency: Number must be less than or equal to 4"],
                command: ["server", "pipeline", "--concurrency", "3"], error: "server_refused",
                message: "concurrency: Number must be less than or equal to 4"),
        Refusal(knobs: ["refuseToken": true], command: ["server", "status"], error: "token_refused",
                message: "The server refused the token. Pair again with parlourctl pair LINK, or set it with parlourctl token set."),
        Refusal(knobs: ["adminOff": true], command: ["server", "status"], error: "server_refused",
                message: "remote management is switched off on this server"),
        Refusal(knobs: [:], command: ["server", "start", "tts"], error: "server_refused", message: "no service called tts; try llm or whisper"),
        Refusal(knobs: [:], command: ["server", "logs", "kernel"], error: "server_refused", message: "no log called kernel; try agent, llm or whisper"),
        Refusal(knobs: ["adminServices": ["llm": ["configured": false]]], command: ["server", "restart", "llm"], error: "server_refused",
                message: "this server does not run llm: its config has no use for it, or its model is missing"),
        Refusal(knobs: ["adminTooBig": true], command: ["server", "start", "llm"], error: "server_refused",
                message: "the local model needs about 20 GB and this machine has 16 GB; pick a smaller model"),
        Refusal(knobs: ["adminServices": ["whisper": ["installed": false]]], command: ["server", "start", "whisper"], error: "server_refused",
                message: "whisper, kept warm is not installed as a service. parlour service install on the server sets it up"),
        Refusal(knobs: ["adminManagerRefuses": "launchctl: Input/output error"], command: ["server", "restart", "whisper"],
                error: "server_refused", message: "launchctl: Input/output error"),
        Refusal(knobs: ["restartManual": true], command: ["server", "restart-agent"], error: "server_refused",
                message: "this agent was started in a terminal, so nothing would start it again. Restart it there"),
        Refusal(knobs: [:], first: ["server", "stop", "--yes", "whisper"], command: ["server", "stop", "--yes", "whisper"],
                error: "server_refused", message: "that was done a moment ago; try again in ", prefix: true),
        Refusal(knobs: ["garbage": "html"], command: ["server", "status"], error: "bad_answer",
                message: "The server's answer to /admin is not JSON."),
        Refusal(knobs: ["garbage": "wrong-types"], command: ["server", "doctor"], error: "bad_answer",
                message: "The server's answer to /admin/doctor has no checks list."),
        Refusal(knobs: ["garbage": "json"], command: ["server", "logs", "llm"], error: "bad_answer",
                message: "The server's answer to /admin/logs is not JSON."),
        // Last: the restart it schedules is still pending when the test ends.
        Refusal(knobs: ["restartDelayMs": 60000], first: ["server", "restart-agent"], command: ["server", "doctor"],
                error: "server_refused", message: "the agent is restarting; ask again in a moment"),
    ]

    @Test("each refusal is shown in the server's own words with exit 1, and garbage is bad_answer")
    func refusals() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server), token: server.token)
        for refusal in Self.refusals {
            try await server.reset()
            try await server.setKnobs(refusal.knobs)
            if let first = refusal.first {
                let done = try await Self.ctl(daemon, first)
                #expect(done.status == 0, "\(refusal): \(done.err)")
            }
            let done = try await Self.ctl(daemon, ["--json"] + refusal.command)
            #expect(done.status == 1, "\(refusal)")
            let result = try JSONValue.parse(done.out)
            #expect(result["status"] == "error" && result["error"] == .string(refusal.error), "\(refusal): \(done.out)")
            let message = result["message"]?.stringValue ?? ""
            #expect(refusal.prefix ? message.hasPrefix(refusal.message) : message == refusal.message, "\(refusal): \(message)")
            #expect(!message.contains(server.token))
        }
        // The human form: the server's words after "Error: " on standard error, exit 1.
        try await server.reset()
        try await server.setKnobs(["adminOff": true])
        let human = try await daemon.ctl("server", "doctor")
        #expect(human.status == 1 && human.out.isEmpty)
        #expect(human.err == "Error: remote management is switched off on this server\n")
        // Still answering, and nothing leaked.
        #expect(try await daemon.result("status")["status"] == "completed")
        #expect(await daemon.stop() == 0)
        #expect(!daemon.stderr.contains(server.token))
    }

    @Test("no server, no token, and a server that is gone are no_server, not_paired and server_unreachable")
    func noServer() async throws {
        let lonely = try await DaemonHarness.start(config: Self.config(nil))
        let none = try await lonely.result("server", "status")
        #expect(none["error"] == "no_server")
        #expect(await lonely.stop() == 0)

        let server = try await TestServer.start()
        let tokenless = try await DaemonHarness.start(config: Self.config(server))
        #expect(try await tokenless.result("server", "doctor")["error"] == "not_paired")
        #expect(await tokenless.stop() == 0)

        let daemon = try await DaemonHarness.start(config: Self.config(server), token: server.token)
        await server.shutdown()
        let gone = try await daemon.ctl("--json", "server", "status")
        #expect(gone.status == 1)
        #expect(try JSONValue.parse(gone.out)["error"] == "server_unreachable")
        #expect(await daemon.stop() == 0)
    }

    @Test("a value outside the server's bounds is refused before anything is sent, by parlourctl and by the daemon")
    func boundsBeforeSending() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server), token: server.token)
        for options in [["--concurrency", "9"], ["--timeout", "4"], ["--queue-depth", "0"], ["--max-tasks", "11"], ["--triage", "maybe"]] {
            let done = try await Self.ctl(daemon, ["server", "pipeline"] + options)
            #expect(done.status == 2, "\(options)")
            #expect(done.err.hasPrefix("Error: '\(options[0])' must be "), "\(done.err)")
            #expect(done.err.contains("(the server's bounds), not '\(options[1])'."), "\(done.err)")
        }
        // A program speaking the socket itself is held to the same bounds.
        let client = try SocketClient(path: daemon.socket)
        client.send(#"{"v":1,"id":"p","cmd":"server pipeline","concurrency":9}"# + "\n")
        let refused = await client.result("p")
        #expect(refused?["error"] == "invalid_request")
        #expect(refused?["message"]?.stringValue?.contains("from 1 to 4") == true)
        #expect(try await Self.adminRequests(server).isEmpty)
        #expect(try await server.requests().allSatisfy { $0["method"] != "POST" })
        #expect(await daemon.stop() == 0)
    }

    @Test("only the settings that differ from the saved pipeline are sent, after reading it; nothing when none differ")
    func onlyChanges() async throws {
        let server = try await TestServer.start(knobs: ["restartManual": true])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server), token: server.token)
        // Saved: concurrency 2, queue depth 2, max tasks 3, timeout 45 s, triage auto.
        let done = try await daemon.ctl("server", "pipeline", "--concurrency", "2", "--queue-depth", "5", "--timeout", "45", "--triage", "never")
        #expect(done.status == 0, "\(done.err)")
        #expect(done.out == "Saved queue depth 5, triage never. They take effect when the server's agent next starts.\n")
        var admin = try await Self.adminRequests(server)
        #expect(admin.map { "\($0["method"]?.stringValue ?? "") \($0["path"]?.stringValue ?? "")" } == ["GET /admin", "POST /admin/pipeline"])
        #expect(admin.last?["patch"] == ["queueDepth": 5, "triage": "never"])

        // The same again: nothing differs, so nothing is posted; a restart is still needed for the earlier change.
        let again = try await daemon.result("server", "pipeline", "--queue-depth", "5")
        #expect(again["response"]?["sent"] == [:])
        #expect(again["response"]?["restart"] == "needed")
        admin = try await Self.adminRequests(server)
        #expect(admin.filter { $0["method"] == "POST" }.count == 1)

        // Automatic restarts: the change is saved and the agent restarts with it.
        try await server.setKnobs(["restartManual": false, "restartDelayMs": 60000])
        let scheduled = try await daemon.result("server", "pipeline", "--timeout", "90")
        #expect(scheduled["response"]?["restart"] == "scheduled")
        #expect(scheduled["response"]?["sent"] == ["timeoutMs": 90000])
        #expect(scheduled["response"]?["pipeline"]?["timeoutMs"] == 90000)
        #expect(await daemon.stop() == 0)
    }

    @Test("stop asks on a terminal: without one and without --yes it is refused unsent; --yes stops and says where it ended up")
    func stopConfirmation() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server), token: server.token)
        let refused = try await daemon.ctl("server", "stop", "llm")
        #expect(refused.status == 2)
        #expect(refused.err.contains("there is no terminal to ask on. Add --yes to stop it anyway."), "\(refused.err)")
        #expect(try await Self.adminRequests(server).isEmpty)

        let stopped = try await daemon.ctl("server", "stop", "llm", "--yes")
        #expect(stopped.status == 0, "\(stopped.err)")
        #expect(stopped.out == "llm (the local model) is now stopped, and staying stopped until it is started.\n")
        let status = try await daemon.result("server", "status")
        #expect(status["response"]?["services"]?.arrayValue?.first?["running"] == false)
        #expect(await daemon.stop() == 0)
    }

    @Test("a slow model start is waited for, longer than an ordinary request, and the daemon answers meanwhile")
    func slowStart() async throws {
        // Longer than the 20 s an ordinary request may take: loading a model may take a minute.
        let server = try await TestServer.start(knobs: ["adminWorkMs": 22000])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server), token: server.token)
        let client = try SocketClient(path: daemon.socket)
        client.request(.serverService(name: "llm", action: .start), id: "start")
        client.request(.status, id: "status")
        client.request(.serverStatus, id: "server status")
        // Results arrive as they finish: both answers come while the start is under way.
        var results: [String: JSONValue] = [:]
        while results.count < 2, let line = await client.next(where: { $0["status"] != nil }), let id = line["id"]?.stringValue {
            results[id] = line
        }
        #expect(results["status"]?["status"] == "completed" && results["server status"]?["status"] == "completed", "\(results)")
        // The server runs one change at a time, and says so in its own words.
        client.request(.serverDoctor, id: "doctor")
        let doctor = await client.result("doctor")
        #expect(doctor?["error"] == "server_refused")
        #expect(doctor?["message"] == "another change is still being made; try again when it is done")
        let start = await client.result("start")
        #expect(start?["status"] == "completed", "\(String(describing: start))")
        #expect(start?["response"]?["service"]?["running"] == true)
        #expect(await daemon.stop() == 0)
    }

    @Test("the token goes to the pinned server only, in the header; a pin elsewhere gets it only from token set")
    func tokenOnlyToPinned() async throws {
        let token = "shared-\(UUID().uuidString)"
        let first = try await TestServer.start(token: token)
        let second = try await TestServer.start(token: token)
        defer { first.stop(); second.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(nil), token: token)
        #expect(try await daemon.ctl("use", first.url).status == 0)
        var outputs: [Finished] = []
        for command in [["server", "status"], ["server", "doctor"], ["server", "logs", "llm"]] {
            outputs.append(try await Self.ctl(daemon, command))
        }
        #expect(try await second.requests().isEmpty)
        let firstAdmin = try await Self.adminRequests(first)
        #expect(firstAdmin.count == 3)

        #expect(try await daemon.ctl("use", second.url).status == 0)
        // Another origin: the token stayed behind, and the second server was asked /health alone, with nothing.
        #expect(try await second.requests().first?["path"] == "/health")
        #expect(try await second.requests().allSatisfy { $0["credential"] == .null })
        let unauthorised = try await daemon.ctl("server", "status")
        #expect(unauthorised.status == 1 && !unauthorised.err.contains(token))
        #expect(try await second.requests().allSatisfy { $0["credential"] == .null })
        #expect(try await daemon.ctl("token", "set", input: token + "\n").status == 0)
        try await first.reset()
        try await second.reset()
        outputs.append(try await daemon.ctl("--json", "server", "status"))
        outputs.append(try await daemon.ctl("server", "restart", "llm"))
        #expect(try await Self.adminRequests(first).isEmpty)
        let secondAdmin = try await Self.adminRequests(second)
        #expect(secondAdmin.count == 2)

        for request in firstAdmin + secondAdmin {
            #expect(request["credential"] == "header" && request["tokenOk"] == true)
            #expect(request["query"]?["token"] == nil)
            #expect(request["headers"]?["Authorization"] == "Bearer <redacted>")
        }
        for output in outputs {
            #expect(output.status == 0, "\(output.err)")
            #expect(!output.out.contains(token) && !output.err.contains(token))
        }
        #expect(await daemon.stop() == 0)
        #expect(!daemon.stderr.contains(token))
    }
}
