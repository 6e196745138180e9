// The satellite's own wake word (`wake` `local`) from the outside: a real daemon
// whose paced microphone reads a FIFO the test speaks into (espeak-ng saying
// "okay nabu", which the shipped okay_nabu model hears), the project's test
// server on either transport, and parlourctl. Nothing of the room may reach the
// server before the wake word: its own log says what it got.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("The satellite listens for its own wake word", .serialized, .timeLimit(.minutes(3)))
struct WakeWordTests {
    static let question = "turn off the kitchen lights"

    static func config(_ server: TestServer, transport: String, extra: [String: JSONValue] = [:]) -> JSONValue {
        var fields: [String: JSONValue] = [
            "name": "kitchen-pi", "room": "kitchen", "transport": .string(transport), "wake": "local",
            "server": ["url": .string(server.url), "retryMs": 2000],
            "audio": ["input": "testmic", "output": "testspeaker", "leadingSilenceMs": 4000],
        ]
        fields.merge(extra) { _, new in new }
        return .object(fields)
    }

    /// The wake word, a short pause, the question, and silence after it.
    static func wakeAndAsk() async throws -> Data {
        try await Speech.raw("okay nabu", before: 0.5, after: 0.5) + Speech.raw(question, before: 0, after: 2)
    }

    /// A watch, returned once the satellite is idle (the stream's socket is open, or the server answers).
    static func idleWatch(_ daemon: DaemonHarness) async throws -> SocketClient {
        let watcher = try SocketClient(path: daemon.socket)
        let status = await watcher.watch()
        if status?["status"]?["state"] != "idle" { _ = await watcher.state("idle") }
        return watcher
    }

    /// Every watch event up to and including the `finished` of the next listen.
    static func eventsOfTurn(_ watcher: SocketClient) async -> [JSONValue] {
        var seen: [JSONValue] = []
        while let event = await watcher.next(where: { _ in true }) {
            seen.append(event)
            if event["event"] == "finished" && event["command"] == "listen" { break }
        }
        return seen
    }

    /// What reached the server: socket messages in, and /voice posts; with `until`, once the satellite
    /// has sent a message of that type (`spoke` goes up as it goes idle, and may still be on its way
    /// when the turn's result is seen).
    static func sent(_ server: TestServer, until type: String? = nil) async throws -> (socket: [JSONValue], voice: [JSONValue]) {
        let log = if let type { try await server.socketLog(until: type) } else { try await server.socketLog() }
        let socket = log.filter { $0["dir"] == "in" && ($0["kind"] == "binary" || $0["kind"] == "text") }
        let voice = try await server.requests().filter { $0["path"] == "/voice" }
        return (socket, voice)
    }

    // MARK: A wake, a turn

    @Test("the wake word and a question give one turn, the reply plays, and the wake is in status, watch and the journal",
          arguments: ["stream", "record"])
    func wakeAndTurn(transport: String) async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 1200, "toneHz": 440, "replyText": "The lights are off."])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server, transport: transport), token: server.token, fifoMic: true)
        let watcher = try await Self.idleWatch(daemon)
        let status = try await daemon.result("status")
        #expect(status["response"]?["wake"] == "local")
        #expect(status["response"]?["wakeWord"] == ["model": "okay_nabu", "ok": true, "error": .null])
        #expect(try await daemon.ctl("status").out.contains("Wake word:  okay_nabu (works)\n"))

        let question = try await Speech.raw(Self.question, before: 0, after: 2)
        daemon.room?.say(try await Speech.raw("okay nabu", before: 0.5, after: 0.5) + question)
        let events = await Self.eventsOfTurn(watcher)
        let wakes = events.filter { $0["event"] == "wake" }
        #expect(wakes.count == 1, "\(events.map { $0["event"]?.stringValue ?? "?" })")
        #expect(wakes.first?["model"] == "okay_nabu")
        let probability = wakes.first?["probability"]?.numberValue ?? 0
        #expect(probability > 0.85 && probability <= 1, "probability \(probability) over okay_nabu's cutoff 0.85")
        let finished = try #require(events.last)
        #expect(finished["result"]?["status"] == "completed")
        #expect(finished["result"]?["response"]?["heard"] == "turn off the kitchen lights")
        #expect(finished["result"]?["response"]?["reply"] == "The lights are off.")
        // The turn ran as any other: listening, thinking, speaking, in that order after the wake.
        let states = events.filter { $0["event"] == "state" }.compactMap { $0["state"]?.stringValue }
        #expect(states == ["listening", "thinking", "speaking", "idle"], "\(states)")

        // The question went up whole: all of it is audio from after the wake.
        let questionMs = Double(question.count / 32) - 2000
        let (socket, voice) = try await Self.sent(server, until: transport == "stream" ? "spoke" : nil)
        if transport == "stream" {
            let kinds = socket.map { $0["type"]?.stringValue ?? "audio" }
            #expect(kinds.first == "start", "nothing before start: \(kinds)")
            let end = try #require(kinds.firstIndex(of: "end"))
            #expect(kinds.filter { $0 == "start" }.count == 1)
            let audioMs = socket[1..<end].compactMap { $0["bytes"]?.numberValue }.reduce(0, +) / 32
            #expect(audioMs > questionMs, "sent \(audioMs) ms of audio for \(questionMs) ms of question")
            #expect(kinds.last == "spoke")
            let upgrades = try await server.requests().filter { $0["path"] == "/listen" }
            #expect(upgrades.count == 1)
            #expect(upgrades.first?["mode"] == "push")
            #expect(voice.isEmpty)
        } else {
            #expect(voice.count == 1)
            let sentMs = voice.first?["audioMs"]?.numberValue ?? 0
            #expect(sentMs > questionMs, "sent \(sentMs) ms of audio for \(questionMs) ms of question")
            #expect(socket.isEmpty)
        }
        let played = try daemon.playedSound()
        #expect(abs(played.count - 19200) <= 1600, "played \(played.count) samples")
        #expect(abs(Speech.crossingsPerSecond(played) - 880) < 30)

        #expect(await daemon.stop() == 0)
        #expect(daemon.stderr.contains("Heard the wake word (okay_nabu, probability"))
        #expect(daemon.stderr.contains("model=okay_nabu"))
        #expect(!daemon.stderr.contains(server.token))
    }

    @Test("a question alone, again and again, sends nothing at all; the wake word after them still wakes",
          arguments: ["stream", "record"])
    func nothingWithoutTheWord(transport: String) async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 400])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server, transport: transport), token: server.token, fifoMic: true)
        let watcher = try await Self.idleWatch(daemon)
        let question = try await Speech.raw("what is the weather like", before: 0.3, after: 1)
        let other = try await Speech.raw(Self.question, before: 0.3, after: 1)
        daemon.room?.say(question + other + question + other)
        await daemon.room?.drained()
        // The room reads on in order: once the wake word after them wakes, the questions were all heard.
        daemon.room?.say(try await Self.wakeAndAsk())
        let events = await Self.eventsOfTurn(watcher)
        #expect(events.filter { $0["event"] == "wake" }.count == 1)
        let (socket, voice) = try await Self.sent(server)
        if transport == "stream" {
            #expect(socket.first?["type"] == "start", "the first thing up is the wake's start: \(socket.first ?? .null)")
            #expect(socket.filter { $0["type"] == "start" }.count == 1)
        } else {
            #expect(voice.count == 1)
        }
        #expect(await daemon.stop() == 0)
    }

    // MARK: Muted, speaking, parlourctl listen

    @Test("muted, the wake word does nothing and the microphone is closed; unmuted, it wakes again",
          arguments: ["stream", "record"])
    func muted(transport: String) async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 400])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server, transport: transport), token: server.token, liveMic: true)
        let watcher = try await Self.idleWatch(daemon)
        #expect(try await daemon.ctl("mute").status == 0)
        #expect(!daemon.openFiles.contains(daemon.dir.path + "/mic.fifo"), "muted, the microphone is released")
        // Said into a live room while muted: gone by the time the satellite is unmuted.
        daemon.room?.say(try await Self.wakeAndAsk())
        await daemon.room?.drained()
        #expect(try await daemon.ctl("unmute").status == 0)
        _ = await watcher.state("idle")
        daemon.room?.say(try await Self.wakeAndAsk())
        let events = await Self.eventsOfTurn(watcher)
        #expect(events.filter { $0["event"] == "wake" }.count == 1)
        let (socket, voice) = try await Self.sent(server)
        #expect(socket.filter { $0["type"] == "start" }.count == (transport == "stream" ? 1 : 0))
        #expect(voice.count == (transport == "record" ? 1 : 0))
        #expect(await daemon.stop() == 0)
    }

    @Test("with echo cancelling off, the wake word does not wake it while the answer plays (EchoCancelTests: on, it does)")
    func notWhileSpeaking() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 4000])
        defer { server.stop() }
        let config = Self.config(server, transport: "stream", extra: [
            "audio": ["input": "testmic", "output": "testspeaker", "leadingSilenceMs": 4000, "echoCancel": false]])
        let daemon = try await DaemonHarness.start(config: config, token: server.token, liveMic: true)
        let watcher = try await Self.idleWatch(daemon)
        daemon.room?.say(try await Self.wakeAndAsk())
        _ = await watcher.next { $0["event"] == "wake" }
        _ = await watcher.state("speaking")
        daemon.room?.say(try await Speech.raw("okay nabu", before: 0.2, after: 0.5))
        await daemon.room?.drained()
        _ = await watcher.next { $0["event"] == "finished" }
        // Said once more, now that it is idle: the second wake, and the second turn.
        daemon.room?.say(try await Self.wakeAndAsk())
        let events = await Self.eventsOfTurn(watcher)
        #expect(events.filter { $0["event"] == "wake" }.count == 1, "one wake between the turns: \(events)")
        let (socket, _) = try await Self.sent(server)
        #expect(socket.filter { $0["type"] == "start" }.count == 2)
        #expect(await daemon.stop() == 0)
    }

    @Test("parlourctl listen still works with a local wake word", arguments: ["stream", "record"])
    func listenStillWorks(transport: String) async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 400])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config(server, transport: transport), token: server.token, fifoMic: true)
        let watcher = try await Self.idleWatch(daemon)
        let listen = Task { try await daemon.result("listen") }
        _ = await watcher.state("listening")
        daemon.room?.say(try await Speech.raw(Self.question, before: 0.3, after: 1.5))
        let result = try await listen.value
        #expect(result["status"] == "completed")
        #expect(result["response"]?["heard"] == "turn off the kitchen lights")
        // And the ear is open again after it.
        _ = await watcher.next { $0["event"] == "finished" }
        daemon.room?.say(try await Self.wakeAndAsk())
        let events = await Self.eventsOfTurn(watcher)
        #expect(events.filter { $0["event"] == "wake" }.count == 1)
        #expect(events.last?["result"]?["status"] == "completed")
        #expect(await daemon.stop() == 0)
    }

    // MARK: Bad input

    /// Starts the daemon on `config` and returns its exit status and stderr.
    static func start(_ config: String, environment: [String: String] = [:]) async throws -> (status: Int32, err: String, file: String) {
        let dir = try Package.temporaryDirectory("wakeconfig")
        let file = dir.appendingPathComponent("satellite.json").path
        try config.write(toFile: file, atomically: true, encoding: .utf8)
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        let done = try await Subprocess.run(Package.binDirectory + "/parlour-satellite",
                                            ["--config", file, "--state-dir", dir.path, "--socket", dir.path + "/c.sock"],
                                            environment: env)
        return (done.status, done.err, file)
    }

    @Test("an unknown model name stops the start, naming the file, the key and the models there are")
    func unknownModel() async throws {
        let (status, err, file) = try await Self.start(#"{"wake": "local", "wakeWord": {"model": "okay_nabo"}}"#)
        #expect(status == 78)
        #expect(err.contains("\(file): wakeWord.model: expected \"okay_nabu\", \"hey_jarvis\", \"alexa\" or \"hey_mycroft\""))
        #expect(err.contains("found \"okay_nabo\""))
    }

    @Test("a model that cannot be used stops the start, naming the file, the key, the model's file and what was expected")
    func badModels() async throws {
        let directory = try Package.temporaryDirectory("wakemodels")
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        func manifest(model: String) -> String {
            #"{"type": "micro", "wake_word": "Hey", "model": "\#(model)", "version": 2, "micro": {"probability_cutoff": 0.8, "sliding_window_size": 5, "feature_step_size": 10}}"#
        }
        try #"{"type": "openwakeword", "model": "hey.onnx"}"#.write(toFile: path("oww.json"), atomically: true, encoding: .utf8)
        try manifest(model: "absent.tflite").write(toFile: path("absent.json"), atomically: true, encoding: .utf8)
        // The shipped okay_nabu with its input narrowed from 40 feature channels to 32.
        var model = try Data(contentsOf: WakeWordFiles.directory.appendingPathComponent("models/okay_nabu.tflite"))
        let shape = Data([3, 1, 3, 40].flatMap { (value: Int32) in withUnsafeBytes(of: value.littleEndian, Array.init) })
        let at = try #require(model.range(of: shape))
        model[at.upperBound - 4] = 32
        try model.write(to: URL(fileURLWithPath: path("narrow.tflite")))
        try manifest(model: "narrow.tflite").write(toFile: path("narrow.json"), atomically: true, encoding: .utf8)

        let cases: [(String, [String])] = [
            ("oww.json", [path("oww.json"), "\"type\" must be \"micro\"", "not \"openwakeword\""]),
            ("absent.json", [path("absent.tflite"), "does not exist"]),
            ("narrow.json", [path("narrow.tflite"), "takes input [1, 3, 32]", "expected [1, frames, 40]"]),
            ("none.json", [path("none.json"), "cannot be read"]),
        ]
        for (name, mustSay) in cases {
            let (status, err, file) = try await Self.start(#"{"wake": "local", "wakeWord": {"model": "\#(path(name))"}}"#)
            #expect(status == 78, "\(name): \(err)")
            for words in ["\(file): wakeWord.model: expected a microWakeWord model"] + mustSay {
                #expect(err.contains(words), "\(name): \"\(err)\" does not say \(words)")
            }
        }
    }

    @Test("a TensorFlow Lite library that cannot be loaded stops the start, naming it; without wake local it is not even loaded")
    func badLibrary() async throws {
        let folder = try Package.temporaryDirectory("wakefolder")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("lib"), withIntermediateDirectories: true)
        let library = folder.appendingPathComponent("lib/libtensorflowlite_c.so").path
        try "not a library".write(toFile: library, atomically: true, encoding: .utf8)
        let (status, err, file) = try await Self.start(#"{"wake": "local"}"#, environment: ["PARLOUR_SATELLITE_WAKEWORD": folder.path])
        #expect(status == 78)
        #expect(err.contains("\(file): wake: \"local\" needs TensorFlow Lite's C library \(library) cannot be loaded"))
        #expect(err.contains("scripts/deps"))

        // With the server's wake word the same broken folder is never looked at: the daemon starts.
        let daemon = try await DaemonHarness.start(config: ["transport": "record", "wake": "push"],
                                                   environment: ["PARLOUR_SATELLITE_WAKEWORD": folder.path])
        #expect(daemon.isRunning)
        let status2 = try await daemon.result("status")
        #expect(status2["response"]?["wakeWord"] == nil, "no wakeWord in a status without wake local")
        #expect(!daemon.openFiles.contains(library))
        #expect(await daemon.stop() == 0)
    }
}

@Suite("doctor checks the wake word's library and model", .serialized, .timeLimit(.minutes(2)))
struct WakeWordDoctorTests {
    @Test("both pass while their files are there; a removed model or library fails with its fix")
    func doctor() async throws {
        // A folder of the wake word's own, laid out as .build/wakeword, so its files can be taken away.
        let folder = try Package.temporaryDirectory("wakefolder")
        let fm = FileManager.default
        for sub in ["lib", "models"] { try fm.createDirectory(at: folder.appendingPathComponent(sub), withIntermediateDirectories: true) }
        for file in ["lib/libtensorflowlite_c.so", "models/okay_nabu.json", "models/okay_nabu.tflite"] {
            try fm.copyItem(at: WakeWordFiles.directory.appendingPathComponent(file), to: folder.appendingPathComponent(file))
        }
        let daemon = try await DaemonHarness.start(config: ["transport": "record", "wake": "local"],
                                                   environment: ["PARLOUR_SATELLITE_WAKEWORD": folder.path])
        func checks() async throws -> [String: DoctorCheck] {
            let report = DoctorReport(json: try await daemon.result("doctor")["response"] ?? .null)
            return Dictionary(uniqueKeysWithValues: report.checks.map { ($0.name.rawValue, $0) })
        }
        var found = try await checks()
        #expect(found["wake_word_library"]?.status == .ok)
        #expect(found["wake_word_library"]?.detail.contains("TensorFlow Lite 2.") == true)
        #expect(found["wake_word_model"]?.status == .ok)

        try fm.removeItem(at: folder.appendingPathComponent("models/okay_nabu.tflite"))
        found = try await checks()
        #expect(found["wake_word_model"]?.status == .fail)
        #expect(found["wake_word_model"]?.detail.contains(folder.appendingPathComponent("models/okay_nabu.tflite").path + " does not exist") == true)
        #expect(found["wake_word_model"]?.fix?.contains("--reinstall parlour-satellite") == true)

        try fm.removeItem(at: folder.appendingPathComponent("lib/libtensorflowlite_c.so"))
        found = try await checks()
        #expect(found["wake_word_library"]?.status == .fail)
        #expect(found["wake_word_library"]?.detail.contains("does not exist") == true)
        #expect(found["wake_word_library"]?.fix?.contains("scripts/deps") == true)
        #expect(await daemon.stop() == 0)
    }
}
