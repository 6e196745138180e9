// `parlourctl server ...` without a daemon or a server: the command line, the
// socket requests, the pipeline's bounds and what changed, the /admin answers
// read strictly, and the words a person reads. Easy to get wrong here: a value
// outside the server's bounds must never get as far as a request.
import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("parlourctl server, without a server")
struct ServerAdminTests {
    private static func change(_ values: [PipelineSetting: JSONValue]) -> PipelineChange {
        var change = PipelineChange()
        for (setting, value) in values {
            let accepted = change.set(setting, value)
            #expect(accepted)
        }
        return change
    }

    private static func run(_ command: ControlCommand, json: Bool = false) -> ParlourctlInvocation {
        ParlourctlInvocation(action: .run(command), json: json)
    }

    // MARK: the command line

    @Test("the server commands are understood", arguments: [
        (["server", "status"], run(.serverStatus)),
        (["--json", "server", "status"], run(.serverStatus, json: true)),
        (["server", "start", "llm"], run(.serverService(name: "llm", action: .start))),
        (["server", "restart", "whisper", "--json"], run(.serverService(name: "whisper", action: .restart), json: true)),
        (["server", "stop", "llm"], ParlourctlInvocation(action: .stopService(name: "llm", yes: false))),
        (["server", "stop", "--yes", "whisper"], ParlourctlInvocation(action: .stopService(name: "whisper", yes: true))),
        (["server", "pipeline", "--concurrency", "3", "--timeout=60"],
         run(.serverPipeline(change([.concurrency: 3, .timeoutMs: 60000])))),
        (["server", "pipeline", "--queue-depth", "10", "--max-tasks", "1", "--triage", "never"],
         run(.serverPipeline(change([.queueDepth: 10, .maxTasks: 1, .triage: "never"])))),
        (["server", "pipeline", "--timeout", "5"], run(.serverPipeline(change([.timeoutMs: 5000])))),
        (["server", "pipeline", "--timeout", "300"], run(.serverPipeline(change([.timeoutMs: 300_000])))),
        (["server", "doctor"], run(.serverDoctor)),
        (["server", "logs", "agent"], run(.serverLogs(service: "agent", lines: nil))),
        (["server", "logs", "llm", "--lines", "500"], run(.serverLogs(service: "llm", lines: 500))),
        (["server", "restart-agent"], run(.serverRestartAgent)),
    ])
    func understood(arguments: [String], expected: ParlourctlInvocation) {
        #expect(ParlourctlCommandLine.parse(arguments) == .success(expected))
    }

    @Test("a value outside the server's bounds is a usage error naming the option and the bounds", arguments: [
        (["--concurrency", "0"], "'--concurrency' must be a whole number from 1 to 4 (the server's bounds), not '0'."),
        (["--concurrency", "5"], "'--concurrency' must be a whole number from 1 to 4 (the server's bounds), not '5'."),
        (["--concurrency", "2.5"], "'--concurrency' must be a whole number from 1 to 4 (the server's bounds), not '2.5'."),
        (["--queue-depth", "11"], "'--queue-depth' must be a whole number from 1 to 10 (the server's bounds), not '11'."),
        (["--max-tasks", "0"], "'--max-tasks' must be a whole number from 1 to 10 (the server's bounds), not '0'."),
        (["--timeout", "4"], "'--timeout' must be a whole number of seconds from 5 to 300 (the server's bounds), not '4'."),
        (["--timeout", "301"], "'--timeout' must be a whole number of seconds from 5 to 300 (the server's bounds), not '301'."),
        (["--timeout", "99999999999999999999"],
         "'--timeout' must be a whole number of seconds from 5 to 300 (the server's bounds), not '99999999999999999999'."),
        (["--triage", "sometimes"], "'--triage' must be auto, always or never (the server's bounds), not 'sometimes'."),
        (["--concurrency", "3", "--triage", "Auto"], "'--triage' must be auto, always or never (the server's bounds), not 'Auto'."),
        ([], "Give at least one setting to change: --concurrency, --queue-depth, --max-tasks, --timeout, --triage."),
    ])
    func outOfBounds(options: [String], message: String) {
        guard case .failure(let error) = ParlourctlCommandLine.parse(["server", "pipeline"] + options) else {
            Issue.record("\(options) was accepted")
            return
        }
        #expect(error.description == "Error: \(message)\nSee 'parlourctl server pipeline --help'.")
    }

    @Test("other bad server command lines are usage errors", arguments: [
        (["server"], "Error: Missing expected argument '<subcommand>' after 'server'.\nSee 'parlourctl --help'."),
        (["server", "stop"], "Error: Missing expected argument '<name>'.\nSee 'parlourctl server stop --help'."),
        (["server", "start", "llm", "whisper"], "Error: Unexpected argument 'whisper'.\nSee 'parlourctl server start --help'."),
        (["server", "start", "--yes", "llm"], "Error: Unknown option '--yes'.\nSee 'parlourctl server start --help'."),
        (["server", "logs"], "Error: Missing expected argument '<log>'.\nSee 'parlourctl server logs --help'."),
        (["server", "logs", "llm", "--lines", "0"],
         "Error: '--lines' must be a whole number of at least 1, not '0'.\nSee 'parlourctl server logs --help'."),
        (["server", "frobnicate"], "Error: Unknown command 'server frobnicate'.\nSee 'parlourctl --help'."),
    ])
    func usageErrors(arguments: [String], message: String) {
        guard case .failure(let error) = ParlourctlCommandLine.parse(arguments) else {
            Issue.record("\(arguments) was accepted")
            return
        }
        #expect(error.description == message)
    }

    // MARK: the socket

    @Test("every server command travels the socket and comes back the same", arguments: [
        ControlCommand.serverStatus, .serverService(name: "llm", action: .start), .serverService(name: "llm", action: .stop),
        .serverService(name: "whisper", action: .restart), .serverPipeline(change([.concurrency: 4, .triage: "always"])),
        .serverPipeline(change([.timeoutMs: 5000, .queueDepth: 1, .maxTasks: 10])), .serverDoctor,
        .serverLogs(service: "whisper", lines: 7), .serverLogs(service: "agent", lines: nil), .serverRestartAgent,
    ])
    func roundTrip(command: ControlCommand) throws {
        let line = ControlProtocol.encode(command, id: "7")
        #expect(ControlProtocol.decode(Array(line.utf8)) == .success(ControlRequest(id: "7", command: command)))
    }

    @Test("a socket request outside the server's bounds, or with nothing to change, is invalid_request", arguments: [
        (#"{"concurrency":5}"#, #""concurrency" must be a whole number from 1 to 4 (the server's bounds), not 5."#),
        (#"{"timeoutMs":4999}"#, #""timeoutMs" must be a whole number of milliseconds from 5000 to 300000 (the server's bounds), not 4999."#),
        (#"{"queueDepth":"3"}"#, #""queueDepth" must be a whole number from 1 to 10 (the server's bounds), not "3"."#),
        (#"{"maxTasks":2.5}"#, #""maxTasks" must be a whole number from 1 to 10 (the server's bounds), not 2.5."#),
        (#"{"triage":"later"}"#, #""triage" must be auto, always or never (the server's bounds), not "later"."#),
        (#"{}"#, #"server pipeline needs at least one of "concurrency", "queueDepth", "maxTasks", "timeoutMs", "triage"."#),
        (#"{"concurrency":null}"#, #"server pipeline needs at least one of "concurrency", "queueDepth", "maxTasks", "timeoutMs", "triage"."#),
    ])
    func socketBounds(fields: String, message: String) throws {
        var request = try JSONValue.parse(fields).objectValue ?? [:]
        request["v"] = 1
        request["id"] = "p"
        request["cmd"] = "server pipeline"
        let decoded = ControlProtocol.decode(Array(JSONValue.object(request).text.utf8))
        #expect(decoded == .failure(ControlRejection(id: "p", error: SatelliteError(.invalidRequest, message))))
    }

    @Test("server stop without a name, and logs with a bad count, are invalid_request", arguments: [
        #"{"v":1,"id":"x","cmd":"server stop"}"#, #"{"v":1,"id":"x","cmd":"server start","name":"  "}"#,
        #"{"v":1,"id":"x","cmd":"server logs"}"#, #"{"v":1,"id":"x","cmd":"server logs","service":"llm","lines":0}"#,
        #"{"v":1,"id":"x","cmd":"server logs","service":"llm","lines":"5"}"#,
    ])
    func socketRefusals(line: String) {
        guard case .failure(let rejection) = ControlProtocol.decode(Array(line.utf8)) else {
            Issue.record("\(line) was accepted")
            return
        }
        #expect(rejection.error.code == .invalidRequest)
    }

    // MARK: the pipeline

    @Test("only the settings that differ from the saved pipeline are sent")
    func onlyChanges() {
        let saved = Pipeline(concurrency: 2, queueDepth: 2, maxTasks: 3, timeoutMs: 45000, triage: "auto")
        let wanted = Self.change([.concurrency: 2, .queueDepth: 5, .timeoutMs: 45000, .triage: "never"])
        let sent = wanted.changes(from: saved)
        #expect(sent.fields == ["queueDepth": 5, "triage": "never"])
        #expect(sent.sentence == "queue depth 5, triage never")
        #expect(Self.change([.concurrency: 2, .timeoutMs: 45000]).changes(from: saved).isEmpty)
    }

    @Test("the bounds are the server's, at both edges", arguments: PipelineSetting.allCases)
    func bounds(setting: PipelineSetting) {
        guard let bounds = setting.bounds else {
            #expect(PipelineSetting.triageValues.allSatisfy { setting.check(.string($0)) != nil })
            #expect(setting.check("AUTO") == nil && setting.check(1) == nil)
            return
        }
        #expect(setting.check(.number(Double(bounds.lowerBound))) != nil)
        #expect(setting.check(.number(Double(bounds.upperBound))) != nil)
        #expect(setting.check(.number(Double(bounds.lowerBound - 1))) == nil)
        #expect(setting.check(.number(Double(bounds.upperBound + 1))) == nil)
        #expect(setting.check(.string(String(bounds.lowerBound))) == nil)
    }

    // MARK: the server's answers

    static let status = #"""
        {"version":"0.1.0","role":"server","restart":"automatic",
         "pipeline":{"concurrency":2,"queueDepth":2,"triage":"auto","maxTasks":3,"timeoutMs":45000},
         "saved":{"concurrency":3,"queueDepth":2,"triage":"auto","maxTasks":3,"timeoutMs":60000},
         "services":[
           {"name":"llm","what":"the local model","configured":true,"installed":true,"running":true,"pid":4242,"lastExit":null,"held":false},
           {"name":"whisper","what":"whisper, kept warm","configured":true,"installed":false,"running":false,"pid":null,"lastExit":1,"held":false}],
         "memory":{"totalGb":16,"freeGb":7.4}}
        """#

    @Test("GET /admin is read, and server status says it in plain words")
    func statusText() throws {
        let status = try ServerAnswers.adminStatus(Array(Self.status.utf8))
        #expect(status.services.map(\.name) == ["llm", "whisper"])
        #expect(status.saved.timeoutMs == 60000 && status.pipeline.timeoutMs == 45000)
        let text = ResultText.render(.serverStatus, .completed(status.json), json: false).out
        #expect(text == """
            Parlour:    0.1.0, role server
            Restart:    automatic: the agent comes back by itself after a restart
            In force:   concurrency 2, queue depth 2, max tasks 3, timeout 45 s, triage auto
            Saved:      concurrency 3, queue depth 2, max tasks 3, timeout 60 s, triage auto
                        (differs from the one in force until the agent restarts)
            llm:        running, pid 4242 (the local model)
            whisper:    not installed as a service on the server (whisper, kept warm)
            Memory:     7.4 GB free of 16 GB

            """)
    }

    @Test("a model server's state in plain words", arguments: [
        (true, true, true, 7, nil, false, "running, pid 7"),
        (true, true, false, nil, 0, true, "stopped, and staying stopped until it is started"),
        (true, false, false, nil, nil, false, "not installed as a service on the server"),
        (true, true, false, nil, 137, false, "stopped; it last exited with code 137"),
        (true, true, false, nil, 0, false, "stopped"),
        (false, false, false, nil, nil, false, "not run by this server"),
    ] as [(Bool, Bool, Bool, Int?, Int?, Bool, String)])
    func summary(configured: Bool, installed: Bool, running: Bool, pid: Int?, lastExit: Int?, held: Bool, words: String) {
        let service = ManagedService(name: "llm", what: "the local model", configured: configured, installed: installed,
                                     running: running, pid: pid, lastExit: lastExit, held: held)
        #expect(service.summary == words)
        let text = ResultText.render(.serverService(name: "llm", action: .stop),
                                     .completed(["action": "stop", "service": service.json]), json: false).out
        #expect(text == "llm (the local model) is now \(words).\n")
    }

    @Test("an answer that is not what /admin promises is bad_answer, naming the key", arguments: [
        ("<!doctype html><p>Sign in</p>", "The server's answer to /admin is not JSON."),
        ("[1,2]", "The server's answer to /admin is an array, not a JSON object."),
        (#"{"reply":42,"via":null,"heard":[]}"#, "The server's answer to /admin has no services list."),
        (status.replacingOccurrences(of: #""concurrency":2"#, with: #""concurrency":"2""#),
         "The server's answer to /admin has no pipeline.concurrency whole number."),
        (status.replacingOccurrences(of: #""running":false"#, with: #""running":"no""#),
         "The server's answer to /admin has no services[1].running true or false."),
        (status.replacingOccurrences(of: #""memory":{"totalGb":16,"freeGb":7.4}"#, with: #""memory":7"#),
         "The server's answer to /admin has memory that is a number, not an object."),
    ])
    func badStatus(body: String, message: String) {
        #expect(throws: SatelliteError(.badAnswer, message)) { try ServerAnswers.adminStatus(Array(body.utf8)) }
    }

    @Test("the other /admin answers are read strictly too")
    func otherAnswers() throws {
        #expect(try ServerAnswers.logs(Array(#"{"service":"llm","lines":["a","b"]}"#.utf8)) == ("llm", ["a", "b"]))
        #expect(throws: SatelliteError(.badAnswer, "The server's answer to /admin/logs has lines that are not all strings.")) {
            try ServerAnswers.logs(Array(#"{"service":"llm","lines":["a",2]}"#.utf8))
        }
        #expect(throws: SatelliteError(.badAnswer, "The server's answer to /admin/doctor has no checks[0].detail string.")) {
            try ServerAnswers.doctor(Array(#"{"checks":[{"name":"config","status":"ok"}]}"#.utf8))
        }
        #expect(try ServerAnswers.restartScheduled(Array(#"{"restart":"scheduled"}"#.utf8)) == "scheduled")
        let saved = try ServerAnswers.pipelineSaved(Array(
            #"{"pipeline":{"concurrency":3,"queueDepth":2,"triage":"auto","maxTasks":3,"timeoutMs":45000},"restart":"needed"}"#.utf8))
        #expect(saved.pipeline.concurrency == 3 && saved.restart == "needed")
    }

    // MARK: the words

    @Test("server pipeline says whether a restart was scheduled, is needed, or is not", arguments: [
        ("scheduled", "Saved concurrency 3, timeout 60 s. The server's agent is restarting to use them; the house stops answering for a few seconds.\n"),
        ("needed", "Saved concurrency 3, timeout 60 s. They take effect when the server's agent next starts.\n"),
        ("none", "Saved concurrency 3, timeout 60 s. No restart is needed: the agent already runs with them.\n"),
    ])
    func pipelineText(restart: String, text: String) {
        let pipeline = Pipeline(concurrency: 3, queueDepth: 2, maxTasks: 3, timeoutMs: 60000, triage: "auto")
        let result: JSONValue = ["pipeline": pipeline.json, "restart": .string(restart), "sent": ["concurrency": 3, "timeoutMs": 60000]]
        #expect(ResultText.render(.serverPipeline(PipelineChange()), .completed(result), json: false).out == text)
    }

    @Test("with nothing to change, server pipeline says so, and whether a saved change still waits")
    func nothingToChange() {
        let pipeline = Pipeline(concurrency: 3, queueDepth: 2, maxTasks: 3, timeoutMs: 60000, triage: "auto").json
        let none = ResultText.render(.serverPipeline(PipelineChange()), .completed(["pipeline": pipeline, "restart": "none", "sent": [:]]), json: false)
        #expect(none.out == "Nothing to change: the server's saved pipeline already has these settings.\n")
        let waiting = ResultText.render(.serverPipeline(PipelineChange()), .completed(["pipeline": pipeline, "restart": "needed", "sent": [:]]), json: false)
        #expect(waiting.out.hasSuffix("A saved change is waiting for the agent to restart (parlourctl server restart-agent).\n"))
    }

    @Test("server doctor prints each check with its mark, lined up, and a verdict")
    func doctorText() {
        let checks: JSONValue = ["checks": [
            ["name": "config", "status": "ok", "detail": "config.json reads and is valid"],
            ["name": "memory", "status": "warn", "detail": "7.4 GB free of 16 GB"],
            ["name": "llm", "status": "fail", "detail": "the local model does not answer"],
        ]]
        #expect(ResultText.render(.serverDoctor, .completed(checks), json: false).out == """
            [ ok ] config  config.json reads and is valid
            [warn] memory  7.4 GB free of 16 GB
            [FAIL] llm     the local model does not answer
            1 thing to fix, 1 warning.

            """)
    }

    @Test("a refusal prints the server's words; --json prints the result object")
    func refusalText() {
        let refusal = ControlResult.failure(.serverRefused, "remote management is switched off on this server")
        #expect(ResultText.render(.serverStatus, refusal, json: false) == ("", "Error: remote management is switched off on this server\n"))
        #expect(ResultText.render(.serverStatus, refusal, json: true).out
            == #"{"error":"server_refused","message":"remote management is switched off on this server","status":"error"}"# + "\n")
    }
}
