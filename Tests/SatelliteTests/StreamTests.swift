// The stream transport from the outside: a real daemon holding the /listen
// socket of the project's aiohttp test server, a paced microphone reading a
// FIFO the test speaks into, a file-backed speaker, and parlourctl. What the
// server saw comes from its own log; what the daemon did, from `watch`.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("The stream transport holds /listen", .serialized, .timeLimit(.minutes(2)))
struct StreamTests {
    static let question = "turn off the kitchen lights"

    func config(_ server: TestServer, wake: String, retryMs: Int = 2000, echoCancel: Bool = true, output: String = "testspeaker") -> JSONValue {
        ["name": "kitchen-pi", "room": "kitchen", "transport": "stream", "wake": .string(wake),
         "server": ["url": .string(server.url), "retryMs": .number(Double(retryMs))],
         "audio": ["input": "testmic", "output": .string(output), "leadingSilenceMs": 4000, "echoCancel": .bool(echoCancel)]]
    }

    /// A watch on the daemon, returned once the socket is connected (the state is idle).
    func connectedWatch(_ daemon: DaemonHarness) async throws -> SocketClient {
        let watcher = try SocketClient(path: daemon.socket)
        let status = await watcher.watch()
        if status?["status"]?["state"] != "idle" { _ = await watcher.state("idle") }
        return watcher
    }

    /// The next notice whose message starts with `prefix`.
    func notice(_ watcher: SocketClient, _ prefix: String) async -> JSONValue? {
        await watcher.next { $0["event"] == "notice" && ($0["message"]?.stringValue?.hasPrefix(prefix) ?? false) }
    }

    static func events(_ log: [JSONValue], _ name: String) -> [JSONValue] {
        log.filter { $0["dir"] == "event" && $0["event"] == .string(name) }
    }

    // MARK: Round trips

    @Test("wake mode: speech in the room wakes the server, the reply plays, and spoke follows the WAV")
    func wakeRoundTrip() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 1200, "toneHz": 440, "replyText": "The lights are off."])
        defer { server.stop() }
        // Echo cancelling off: nothing goes up while the answer plays (bargeIn below: on, the room does).
        let daemon = try await DaemonHarness.start(config: config(server, wake: "server", echoCancel: false), token: server.token, fifoMic: true)
        let watcher = try await connectedWatch(daemon)
        daemon.room?.say(try await Speech.raw(Self.question, before: 0.3, after: 2))

        let heard = await watcher.next { $0["event"] == "heard" }
        #expect(heard?["heard"] == "turn off the kitchen lights")
        let reply = await watcher.next { $0["event"] == "reply" }
        #expect(reply?["reply"] == "The lights are off.")
        #expect(reply?["via"] == "local")
        _ = await watcher.state("speaking")
        _ = await watcher.state("idle")

        // The server got the room as binary audio, then spoke only after the whole WAV had played.
        // `spoke` is sent as the satellite goes idle, so it may still be on its way: the log waits for it.
        let log = try await server.socketLog(until: "spoke")
        let binaries = log.filter { $0["dir"] == "in" && $0["kind"] == "binary" }
        #expect(binaries.count > 10)
        #expect(binaries.allSatisfy { $0["bytes"] == 2560 }, "80 ms messages")
        let wav = try #require(log.firstIndex { $0["dir"] == "out" && $0["what"] == "wav" })
        let spoke = try #require(log.firstIndex { $0["dir"] == "in" && $0["type"] == "spoke" })
        #expect(spoke > wav)
        let afterWav = log[spoke]["afterWavMs"]?.numberValue ?? 0
        #expect(afterWav > 1000 && afterWav < 5000, "spoke \(afterWav) ms after the WAV")
        // Not one frame went up while the answer played. A message the satellite sent just before
        // the WAV reached it can still arrive after the server logged the WAV (a race of a few
        // milliseconds, longer on a busy machine); anything 250 ms on would be audio sent while playing.
        let wavAt = log[wav]["t"]?.numberValue ?? 0
        #expect(!log[wav..<spoke].contains {
            $0["dir"] == "in" && $0["kind"] == "binary" && ($0["t"]?.numberValue ?? 0) > wavAt + 250
        })

        let played = try daemon.playedSound()
        #expect(abs(played.count - 19200) <= 1600, "played \(played.count) samples")
        #expect(abs(Speech.crossingsPerSecond(played) - 880) < 30)

        // One connection, the token in the header only, and in no log line.
        let upgrades = try await server.requests().filter { $0["path"] == "/listen" }
        #expect(upgrades.count == 1)
        #expect(upgrades.first?["credential"] == "header")
        #expect(upgrades.first?["query"]?["token"] == nil)
        #expect(upgrades.first?["mode"] == "wake")
        #expect(await daemon.stop() == 0)
        #expect(!daemon.stderr.contains(server.token))
        #expect(daemon.stderr.contains("Connected to the server's /listen"))
    }

    @Test("push mode: nothing goes up until listen; then start, frames, end, and the result has heard, reply and via")
    func pushRoundTrip() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 800, "replyText": "Done."])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server, wake: "push"), token: server.token, fifoMic: true)
        let watcher = try await connectedWatch(daemon)
        let listen = Task { try await daemon.result("listen") }
        _ = await watcher.state("listening")
        daemon.room?.say(try await Speech.raw(Self.question, before: 0.3, after: 1.5))
        let result = try await listen.value
        #expect(result["status"] == "completed")
        #expect(result["response"]?["heard"] == "turn off the kitchen lights")
        #expect(result["response"]?["reply"] == "Done.")
        #expect(result["response"]?["via"] == "local")

        // `spoke` is sent as the satellite goes idle, which may be after the result: the log waits for it.
        let incoming = try await server.socketLog(until: "spoke").filter { $0["dir"] == "in" && ($0["kind"] == "binary" || $0["kind"] == "text") }
        let kinds = incoming.map { $0["type"]?.stringValue ?? "audio" }
        #expect(kinds.first == "start", "\(kinds)")
        let end = try #require(kinds.firstIndex(of: "end"))
        #expect(kinds[1..<end].allSatisfy { $0 == "audio" })
        #expect(end > 20, "the whole question went up")
        #expect(kinds.last == "spoke")
        #expect(!kinds[(end + 1)...].contains("audio"), "nothing after end")
        #expect(await daemon.stop() == 0)
    }

    @Test("use to another server moves the open socket there, and the token stays behind")
    func useMovesTheSocket() async throws {
        let home = try await TestServer.start(knobs: ["recordCredentials": true])
        defer { home.stop() }
        let other = try await TestServer.start(token: "other-\(UUID().uuidString)", knobs: ["recordCredentials": true])
        defer { other.stop() }
        let settings: JSONValue = ["name": "kitchen-pi", "room": "kitchen", "transport": "stream", "wake": "push",
                                   "server": ["retryMs": 2000], "audio": ["input": "testmic", "output": "testspeaker"]]
        let daemon = try await DaemonHarness.start(config: settings, token: home.token)
        let watcher = try SocketClient(path: daemon.socket)
        _ = await watcher.watch()
        #expect(try await daemon.ctl("use", home.url).status == 0)
        _ = await watcher.state("idle")

        #expect(try await daemon.ctl("use", other.url).status == 0)
        let reopened = await notice(watcher, "Reconnecting to the server's /listen: the server in use changed")
        #expect(reopened != nil)
        // The other server holds no token of the satellite's, so its handshake is refused.
        let refused = await notice(watcher, "Disconnected from the server's /listen")
        #expect(refused != nil)
        let upgrades = try await other.requests().filter { $0["path"] == "/listen" }
        #expect(!upgrades.isEmpty, "the socket went to the server in use")
        #expect(upgrades.allSatisfy { $0["shownCredential"]?.stringValue == nil && $0["credential"]?.stringValue == nil }, "\(upgrades)")
        let shown = try await other.requests().compactMap { $0["shownCredential"]?.stringValue }
        #expect(!shown.contains(home.token), "the house's token went to the other server")
        #expect(await daemon.stop() == 0)
    }

    @Test("a pinned server with two addresses, the first of them deaf: the socket opens at the second")
    func secondAddress() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let settings: JSONValue = ["name": "kitchen-pi", "room": "kitchen", "transport": "stream", "wake": "push",
                                   "server": ["retryMs": 2000], "audio": ["input": "testmic", "output": "testspeaker"]]
        let first = try await DaemonHarness.start(config: settings, token: server.token)
        #expect(try await first.ctl("use", server.url).status == 0)
        #expect(await first.stop() == 0)
        // Nothing listens on 127.0.0.2: connecting there is refused at once.
        let file = first.stateDirectory + "/pin.json"
        var pin = try Pin.decode(try FileSystem.read(file), file: file)
        pin.addresses = ["127.0.0.2", server.host]
        try Data(pin.fileData).write(to: URL(fileURLWithPath: file))

        let daemon = try await first.restart()
        let watcher = try SocketClient(path: daemon.socket)
        let status = await watcher.watch()
        if status?["status"]?["state"] != "idle" { #expect(await watcher.state("idle") != nil, "the socket opened") }
        #expect(await daemon.stop() == 0)
    }

    @Test("wake mode: parlourctl listen is a push turn on the same socket")
    func listenInWakeMode() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 600])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server, wake: "server"), token: server.token, fifoMic: true)
        let watcher = try await connectedWatch(daemon)
        let listen = Task { try await daemon.result("listen") }
        _ = await watcher.state("listening")
        daemon.room?.say(try await Speech.raw(Self.question, before: 0.3, after: 1.5))
        let result = try await listen.value
        #expect(result["status"] == "completed")
        #expect(result["response"]?["heard"] == "turn off the kitchen lights")
        // `spoke` may still be in flight when the result comes: the server waits for it.
        let log = try await server.socketLog(until: "spoke")
        let types = log.filter { $0["dir"] == "in" }.compactMap { $0["type"]?.stringValue }
        #expect(types == ["start", "end", "spoke"], "\(types)")
        // The server answered the push turn, not a wake word.
        #expect(Self.events(log, "wake").isEmpty)
        #expect(try await server.requests().filter { $0["path"] == "/listen" }.count == 1)

        // Once the turn is over the room goes up again (from the audio thread, ListenSink, routed as
        // the turn moves): the same question said into it wakes the server.
        #expect(await watcher.next { $0["event"] == "heard" } != nil, "the push turn's own heard")
        _ = await watcher.state("idle")
        daemon.room?.say(try await Speech.raw(Self.question, before: 0.3, after: 1.5))
        let heard = await watcher.next { $0["event"] == "heard" }
        #expect(heard?["heard"] == "turn off the kitchen lights")
        let after = try await server.socketLog()
        #expect(Self.events(after, "wake").count == 1, "the server's wake word, on the room")
        let sent = after.filter { $0["dir"] == "in" && $0["kind"] == "binary" }
        #expect(sent.allSatisfy { $0["bytes"] == 2560 }, "80 ms messages, the push turn's and the room's")
        #expect(await daemon.stop() == 0)
    }

    @Test("parlourctl cancel ends a push turn: cancel goes up and the caller gets cancelled_by_user")
    func cancelPush() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server, wake: "push"), token: server.token, fifoMic: true)
        let watcher = try await connectedWatch(daemon)
        let listen = Task { try await daemon.result("listen") }
        _ = await watcher.state("listening")
        #expect(try await daemon.ctl("cancel").status == 0)
        let result = try await listen.value
        #expect(result["status"] == "cancelled")
        #expect(result["reason"] == "cancelled_by_user")
        let types = try await server.socketLog().filter { $0["dir"] == "in" }.compactMap { $0["type"]?.stringValue }
        #expect(types == ["start", "cancel"], "\(types)")
        _ = await watcher.state("idle")
        #expect(await daemon.stop() == 0)
    }

    @Test("push mode: a server that thinks and goes idle without a word gives one result, nothing_heard")
    func silentDrop() async throws {
        let server = try await TestServer.start(knobs: ["socketSilentDrop": true])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server, wake: "push"), token: server.token, fifoMic: true)
        let watcher = try await connectedWatch(daemon)
        let listen = Task { try await daemon.ctl("listen") }
        _ = await watcher.state("listening")
        daemon.room?.say(try await Speech.raw("what time is it", before: 0.3, after: 1.5))
        let done = try await listen.value
        #expect(done.status == 3)
        #expect(done.err.contains("Nothing was heard"))
        #expect(await daemon.stop() == 0)
    }

    @Test("wake mode with echo cancelling: the room goes on up while the answer plays, and the server's stop ends it at once")
    func bargeIn() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 8000, "toneHz": 440])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server, wake: "server", output: "testspeakerlog"),
                                                   token: server.token, fifoMic: true)
        let watcher = try await connectedWatch(daemon)
        daemon.room?.say(try await Speech.raw(Self.question, before: 0.3, after: 2))
        #expect(await watcher.state("speaking") != nil)
        // Said over the answer: the server hears it, wakes, and says stop.
        daemon.room?.say(try await Speech.raw(Self.question, before: 1, after: 2))
        #expect(await watcher.state("listening") != nil, "the server's second turn")
        let log = try await server.socketLog()
        let wav = try #require(log.firstIndex { $0["dir"] == "out" && $0["what"] == "wav" })
        let stop = try #require(log[wav...].firstIndex { $0["dir"] == "out" && $0["type"] == "stop" })
        #expect(log[wav..<stop].contains { $0["dir"] == "in" && $0["kind"] == "binary" }, "the room went up during the answer")
        _ = await watcher.state("idle")
        // The first answer alone (the second turn's answer is in the next file, or after a silence when
        // the speaker is kept open while the echo is cancelled).
        let played = try daemon.playedSounds().first ?? []
        #expect(played.count < 16000 * 5, "played \(played.count) samples of an 8 s answer")
        #expect(await daemon.stop() == 0)
    }

    @Test("stop from the server cuts the reply short, and spoke follows at once")
    func stopDuringPlayback() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 8000, "socketStopAfterWavMs": 1000])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server, wake: "push"), token: server.token, fifoMic: true)
        let watcher = try await connectedWatch(daemon)
        let listen = Task { try await daemon.result("listen") }
        _ = await watcher.state("listening")
        daemon.room?.say(try await Speech.raw(Self.question, before: 0.3, after: 1.5))
        let result = try await listen.value
        #expect(result["status"] == "completed")
        let spoke = try #require(try await server.socketLog().last { $0["type"] == "spoke" })
        let afterWav = spoke["afterWavMs"]?.numberValue ?? 0
        #expect(afterWav > 900 && afterWav < 3000, "spoke \(afterWav) ms after an 8 s WAV")
        let played = try daemon.playedSound()
        #expect(played.count < 16000 * 3, "played \(played.count) samples of 8 s")
        #expect(await daemon.stop() == 0)
    }

    @Test("an answer that is not a WAV is bad_answer, and nothing plays", arguments: [JSONValue.bool(true), "truncated"])
    func badWav(kind: JSONValue) async throws {
        let server = try await TestServer.start(knobs: ["socketBadWav": kind])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server, wake: "push"), token: server.token, fifoMic: true)
        let watcher = try await connectedWatch(daemon)
        let listen = Task { try await daemon.result("listen") }
        _ = await watcher.state("listening")
        daemon.room?.say(try await Speech.raw(Self.question, before: 0.3, after: 1.5))
        let result = try await listen.value
        #expect(result["error"] == "bad_answer")
        #expect(result["message"]?.stringValue?.contains("WAV") == true)
        #expect(((try? daemon.playedSound()) ?? []).isEmpty)
        #expect(daemon.isRunning)
        #expect(await daemon.stop() == 0)
    }

    // MARK: Connection health

    @Test("the server restarted 20 times: the satellite reconnects every time, 1 s after each drop")
    func restarts() async throws {
        let server = try await TestServer.start(knobs: ["restartDownMs": 100])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server, wake: "push"), token: server.token)
        let watcher = try await connectedWatch(daemon)
        for _ in 0..<20 {
            try await server.restart()
            let gone = await notice(watcher, "Disconnected")
            #expect(gone?["message"]?.stringValue?.contains("1006") == true)
            #expect(gone?["retryMs"] == "1000")
            _ = await notice(watcher, "Connected")
        }
        let log = try await server.socketLog()
        let opens = Self.events(log, "open"), closes = Self.events(log, "close")
        #expect(opens.count == 21)
        // Each reconnect came about a second after its drop: back-off, not a spin, and not the cap.
        for (close, open) in zip(closes, opens.dropFirst()) {
            let gap = (open["t"]?.numberValue ?? 0) - (close["t"]?.numberValue ?? 0)
            #expect(gap > 900 && gap < 1900, "reconnected \(gap) ms after the drop")
        }
        let status = try await daemon.result("status")
        #expect(status["response"]?["state"] == "idle")
        #expect(await daemon.stop() == 0)
    }

    @Test("while the server stays down the delay doubles: 1 s, 2 s, 4 s, then it reconnects")
    func growingBackoff() async throws {
        // Down for 5 s: the tries at 1 and 3 s fail, the one at 7 s connects. With 3.5 s, a loaded
        // machine's second try came after the port was back, the third Disconnected never came, and
        // the test waited out its time limit.
        let server = try await TestServer.start(knobs: ["restartDownMs": 5000])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server, wake: "push", retryMs: 15000), token: server.token)
        let watcher = try await connectedWatch(daemon)
        try await server.restart()
        let delays: [String] = try await Bounded.wait("three Disconnected", said: { daemon.stderr }) { () async -> [String]? in
            var delays: [String] = []
            while delays.count < 3, let gone = await notice(watcher, "Disconnected") { delays.append(gone["retryMs"]?.stringValue ?? "") }
            return delays
        } ?? []
        #expect(delays == ["1000", "2000", "4000"])
        let status = try await daemon.result("status")
        #expect(status["response"]?["state"] == "offline")
        #expect(status["response"]?["server"]?["reachable"] == false)
        _ = await notice(watcher, "Connected")
        let log = try await server.socketLog()
        let gap = (Self.events(log, "open").last?["t"]?.numberValue ?? 0) - (Self.events(log, "close").last?["t"]?.numberValue ?? 0)
        #expect(gap > 5500 && gap < 9000, "reconnected \(gap) ms after the drop")
        #expect(await daemon.stop() == 0)
    }

    @Test("a clean close reconnects at once; quick clean closes in a row back off")
    func cleanClose() async throws {
        let server = try await TestServer.start(knobs: ["socketCloseAfterReady": true])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server, wake: "push"), token: server.token)
        let watcher = try SocketClient(path: daemon.socket)
        await watcher.watch()
        // The watch may attach after the first close, so the delays are read from the journal
        // lines, which hold every one; the watch only says when three have happened.
        var seen = 0
        while seen < 3, await notice(watcher, "Disconnected") != nil { seen += 1 }
        try await server.setKnobs(["socketCloseAfterReady": false])
        let opens = Self.events(try await server.socketLog(), "open").compactMap { $0["t"]?.numberValue }
        #expect(opens.count >= 3)
        if opens.count >= 3 {
            #expect(opens[1] - opens[0] < 700, "the first clean close reconnected at once")
            #expect(opens[2] - opens[1] > 900, "the second quick one waited")
        }
        _ = await watcher.state("idle")
        let delays = daemon.stderr.split(separator: "\n").filter { $0.contains("Disconnected") }.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("retryms=") }.map { $0.dropFirst("retryms=".count).filter { $0 != "\"" } }
        }
        #expect(delays.count >= 3, "\(daemon.stderr)")
        #expect(delays.first == "0")
        #expect(delays.dropFirst().allSatisfy { $0 != "0" }, "\(delays)")
        #expect(await daemon.stop() == 0)
    }

    // Wake server streams the room: the pings and their pongs then ride on the microphone's periods.
    @Test("a server that stops answering pings is found dead after the dead-peer time and reconnected to",
          arguments: ["push", "server"])
    func noPong(wake: String) async throws {
        let server = try await TestServer.start(knobs: ["socketNoPong": true, "wake": "never"])
        defer { server.stop() }
        // The dead-peer time set small for the test (TestBounds): the message says it was the one applied.
        let daemon = try await DaemonHarness.start(config: config(server, wake: wake), token: server.token,
                                                   environment: [TestBounds.deadPeerVariable: "4"])
        let watcher = try await connectedWatch(daemon)
        let gone = await notice(watcher, "Disconnected")
        #expect(gone?["message"]?.stringValue?.contains("stopped answering pings (no pong for 4 s)") == true, "\(String(describing: gone))")
        try await server.setKnobs(["socketNoPong": false])
        _ = await notice(watcher, "Connected")
        let pings = try await server.socketLog().filter { $0["kind"] == "ping" }
        #expect(!pings.isEmpty)
        #expect(await daemon.stop() == 0)
    }

    @Test("streaming the room, the keepalive pings still go every 3 s and their pongs are read: the connection outlives the dead-peer time")
    func pingsWhileStreaming() async throws {
        let server = try await TestServer.start(knobs: ["wake": "never"])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server, wake: "server"), token: server.token,
                                                   environment: [TestBounds.deadPeerVariable: "4"])
        _ = try await connectedWatch(daemon)
        // Three pings take 9 s or more, past the 4 s dead-peer time: a pong left unread would have
        // ended the connection, and the satellite would have opened another.
        let log = try await server.socketLog(until: "ping", count: 3)
        #expect(log.filter { $0["kind"] == "ping" }.count >= 3)
        #expect(log.filter { $0["dir"] == "event" && $0["event"] == "open" }.count == 1, "\(log.filter { $0["dir"] == "event" })")
        #expect(log.contains { $0["dir"] == "in" && $0["kind"] == "binary" }, "the room was streamed")
        #expect(!daemon.stderr.contains("Disconnected"))
        #expect(await daemon.stop() == 0)
    }

    @Test("while the /listen socket is open the server is asked /health one time in ten: the socket checks it")
    func fewerChecksWhileOpen() async throws {
        let server = try await TestServer.start(knobs: ["wake": "never"])
        defer { server.stop() }
        // A healthy server checked again each second, were the socket not open; with it, each tenth second.
        let daemon = try await DaemonHarness.start(config: config(server, wake: "server"), token: server.token,
                                                   environment: [TestBounds.recheckVariable: "1"])
        _ = try await connectedWatch(daemon)
        // Two pings: 6 s or more with the socket open.
        _ = try await server.socketLog(until: "ping", count: 2)
        let early = try await server.requests().filter { $0["path"] == "/health" }.count
        // The check when the server was first followed, and at most one before the socket opened.
        #expect((1...2).contains(early), "\(early) checks of /health in the first pings")
        // Five pings: 15 s or more, past the tenth second: the server was asked again.
        let log = try await server.socketLog(until: "ping", count: 5)
        let later = try await server.requests().filter { $0["path"] == "/health" }.count
        #expect(later > early && later <= early + 2, "\(early) then \(later) checks of /health")
        #expect(log.filter { $0["dir"] == "event" && $0["event"] == "open" }.count == 1)
        #expect(await daemon.stop() == 0)
    }

    @Test("a refused handshake with a bad token is token_refused, offline, and the token is in no log line")
    func refusedToken() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let wrong = "wrong-token-\(UUID().uuidString.prefix(8))"
        let daemon = try await DaemonHarness.start(config: config(server, wake: "push"), token: wrong)
        let watcher = try SocketClient(path: daemon.socket)
        await watcher.watch()
        let gone = await notice(watcher, "Disconnected")
        #expect(gone?["reason"] == "token_refused")
        #expect(gone?["priority"] == "error")
        let status = try await daemon.result("status")
        #expect(status["response"]?["state"] == "offline")
        #expect(status["response"]?["server"]?["tokenAccepted"] == false)
        let result = try await daemon.result("listen")
        #expect(result["error"] == "token_refused")
        #expect(await daemon.stop() == 0)
        #expect(!daemon.stderr.contains(wrong))
        #expect(!daemon.stderr.contains(server.token))
    }

    // MARK: Bounds

    @Test("an oversized message is reported and dropped, and the connection is replaced", arguments: ["socketHugeText", "socketHugeBinary"])
    func oversized(knob: String) async throws {
        let server = try await TestServer.start(knobs: .object([knob: true, "socketUnknownType": true]))
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server, wake: "push"), token: server.token)
        let watcher = try SocketClient(path: daemon.socket)
        await watcher.watch()
        // The drop itself, not the Disconnected warning after it (which names the bound too) nor the unknown
        // type's; the server sends the message again on each connection, so a watch that came late sees the next.
        let dropped = await watcher.next { $0["event"] == "notice" && ($0["message"]?.stringValue?.hasSuffix("bound; it was dropped.") ?? false) }
        #expect(dropped?["priority"] == "error")
        let gone = await notice(watcher, "Disconnected")
        #expect(gone?["message"]?.stringValue?.contains("in step") == true)
        _ = await notice(watcher, "Connected")
        _ = await notice(watcher, "Disconnected")
        try await server.setKnobs(.object([knob: false]))
        _ = await notice(watcher, "Connected")
        let status = try await daemon.result("status")
        #expect(status["response"]?["state"] == "idle")
        #expect(await daemon.stop() == 0)
        // The unknown type came on every connection and was logged once.
        #expect(daemon.stderr.components(separatedBy: "\"weird\"").count == 2, "\(daemon.stderr)")
    }
}
