// Echo cancelling from the outside: a real daemon in a room with an echo
// (EchoRoom: the paced test card's speaker fed back into its microphone through
// sox's reverb, 12 dB quieter and 100 ms late), answering a question with
// espeak-ng speech from the test server. While the answer plays, `meter`
// reports what the daemon's microphone hears after processing; the test card's
// capture copy has what it heard before. Their ratio over the answer after its
// first two seconds is the echo return loss enhancement (ERLE), with echo
// cancelling on and off (noise suppression and gain off both times, so the
// figure is the canceller's alone).
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("echo cancelling in a room with an echo", .serialized, .timeLimit(.minutes(4)))
struct EchoCancelTests {
    static let answer = "The weather today is mostly sunny with a light breeze from the west, and temperatures reaching "
        + "twenty degrees by the afternoon. Tomorrow brings rain in the morning, clearing later, so take an umbrella."

    /// The answer as a 16 kHz WAV for the test server.
    static func answerFile(in directory: URL) throws -> String {
        let samples = try Speech.recording(answer, leadingMs: 0, trailingMs: 200).samples
        let path = directory.appendingPathComponent("answer.wav").path
        try Data(WAV.encode(PCMAudio(sampleRate: 16000, channels: 1, samples: samples))).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// ERLE (dB) over what the microphone heard while the answer played, after its first 2 s.
    static func measure(echoCancel: Bool) async throws -> (erle: Double, heardDBFS: Double) {
        let directory = try Package.temporaryDirectory("echo")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await TestServer.start(knobs: ["audioFile": .string(try answerFile(in: directory)), "wake": "never"])
        defer { server.stop() }
        // A push turn reads 20 ms periods, so 200 ms in the microphone's FIFO is ahead of every read
        // (the ear's two 120 ms periods at once need the room's 320). The room's path is then about
        // 460 ms; with 320 it was 580, and the filters had not converged two seconds in.
        let room = try EchoRoom(directory: directory.path, holdMs: 200)
        defer { room.stop() }
        let alsa = try ALSAFixture.shared()
        let heardFile = directory.appendingPathComponent("heard.raw").path
        let config: JSONValue = [
            "name": "pi", "transport": "stream", "wake": "push", "server": ["url": .string(server.url)],
            "audio": ["input": .string(alsa.microphone(infile: room.microphone, file: heardFile)),
                      "output": .string(alsa.speaker(file: room.speaker)), "leadingSilenceMs": 4000,
                      "echoCancel": .bool(echoCancel), "noiseSuppression": false, "autoGain": false],
        ]
        let daemon = try await DaemonHarness.start(config: config, token: server.token)
        let watcher = try SocketClient(path: daemon.socket)
        // listen is refused until the satellite has connected to /listen (server_unreachable, in a
        // CI run that asked straight after READY=1): it is asked once the state says idle.
        if await watcher.watch()?["status"]?["state"] != "idle" { #expect(await watcher.state("idle") != nil) }
        let listen = Task { try await daemon.ctl("listen") }
        // The room goes on whether or not anyone listens: the question is said once the turn does.
        #expect(await watcher.state("listening") != nil)
        room.say(try Speech.recording("what is the weather like", leadingMs: 300, trailingMs: 0).samples)
        #expect(await watcher.next { $0["event"] == "state" && $0["state"] == "speaking" } != nil)

        let meter = try SocketClient(path: daemon.socket)
        meter.send(#"{"v": 1, "id": "m", "cmd": "meter", "seconds": 6, "processed": true}"# + "\n")
        var levels: [Double] = []
        for await line in meter.lines {
            guard let value = try? JSONValue.parse(line) else { continue }
            if value["event"] == "level", let rms = value["rms"]?.numberValue { levels.append(rms) }
            if value["id"] == "m" { break }
        }
        let listened = try await listen.value
        #expect(listened.status == 0, "listen: \(listened.out) \(listened.err)")
        await daemon.stop()
        if levels.count < 50 { print(daemon.stderr) }
        #expect(room.echoed > 16000, "the speaker was heard in the room")

        // What the card captured, 100 ms at a time as the meter measured it.
        let heard = try alsa.readRaw(heardFile)
        let windows = min(levels.count, heard.count / 1600)
        #expect(windows >= 50, "six seconds of the answer were heard: \(windows) windows")
        var before = 0.0, after = 0.0
        for window in 20..<max(20, windows) {
            for sample in heard[(window * 1600)..<((window + 1) * 1600)] {
                let x = Double(sample) / 32768
                before += x * x
            }
            after += pow(10, levels[window] / 10) * 1600
        }
        return (10 * log10(before / max(after, 1e-12)), 10 * log10(before / Double(max(1, (windows - 20) * 1600))))
    }

    @Test("the local wake word said over an answer stops it and starts a new turn at once")
    func wakeOverAnswer() async throws {
        let directory = try Package.temporaryDirectory("echo")
        defer { try? FileManager.default.removeItem(at: directory) }
        let answer = try Self.answerFile(in: directory)
        let answerSamples = try WAV.decode(FileSystem.read(answer)).frameCount
        let server = try await TestServer.start(knobs: ["audioFile": .string(answer), "wake": "never"])
        defer { server.stop() }
        // The echo 20 dB down, the talker about 25 dB over it: this is about what a wake over an answer
        // does; how loud an answer it is heard over is scripts/bench's (BENCHMARKS.md).
        let room = try EchoRoom(directory: directory.path, gainDB: -20)
        defer { room.stop() }
        let alsa = try ALSAFixture.shared()
        let config: JSONValue = [
            "name": "pi", "transport": "stream", "wake": "local", "server": ["url": .string(server.url), "retryMs": 2000],
            "audio": ["input": .string(alsa.microphone(infile: room.microphone)), "output": .string(alsa.speaker(file: room.speaker)),
                      "leadingSilenceMs": 4000],
        ]
        let daemon = try await DaemonHarness.start(config: config, token: server.token)
        let watcher = try SocketClient(path: daemon.socket)
        if await watcher.watch()?["status"]?["state"] != "idle" { _ = await watcher.state("idle") }
        let wake = Speech.samples(try await Speech.raw("okay nabu", before: 0.5, after: 0.5))
        let question = Speech.samples(try await Speech.raw("what is the weather like", before: 0, after: 2))
        room.say(wake + question)
        #expect(await watcher.next { $0["event"] == "wake" } != nil)
        #expect(await watcher.state("speaking") != nil)
        // Three seconds into the answer, the talker says the word again over it.
        room.say(Speech.samples(Speech.silence(3)) + wake + question)
        // The wake over the answer, then the first turn's result: it gave way to the second.
        var seen: [JSONValue] = []
        while let event = await watcher.next(where: { _ in true }) {
            seen.append(event)
            if event["event"] == "finished" && event["command"] == "listen" { break }
        }
        #expect(seen.contains { $0["event"] == "wake" }, "the word was heard over the answer: \(seen)")
        #expect(seen.last?["result"]?["status"] == "cancelled")
        #expect(seen.last?["result"]?["reason"] == "superseded")
        let played = room.echoed
        #expect(played < answerSamples - 3 * 16000, "the answer stopped early: \(played) of \(answerSamples) samples played")
        // The new turn listens at once (its `start` went up before its phase moved).
        let listens = seen.contains { $0["event"] == "state" && $0["state"] == "listening" }
        #expect(listens ? true : await watcher.state("listening") != nil, "the new turn listens")
        // And hears: the question after the word ends its capture. (The ear once took the microphone
        // from it as the old turn ended, and it heard nothing until its timeout.)
        let moved = await watcher.next { $0["event"] == "state" && $0["state"] != "listening" }
        #expect(moved?["state"] == "thinking", "the new turn heard the question: \(String(describing: moved))")
        #expect(await daemon.stop() == 0)
    }

    @Test("with wake push, parlourctl listen during an answer stops it, and the new turn hears its question")
    func listenOverAnswer() async throws {
        let directory = try Package.temporaryDirectory("echo")
        defer { try? FileManager.default.removeItem(at: directory) }
        let answer = try Self.answerFile(in: directory)
        let answerSamples = try WAV.decode(FileSystem.read(answer)).frameCount
        let server = try await TestServer.start(knobs: ["audioFile": .string(answer), "wake": "never"])
        defer { server.stop() }
        let room = try EchoRoom(directory: directory.path)
        defer { room.stop() }
        let alsa = try ALSAFixture.shared()
        let config: JSONValue = [
            "name": "pi", "transport": "stream", "wake": "push", "server": ["url": .string(server.url)],
            "audio": ["input": .string(alsa.microphone(infile: room.microphone)), "output": .string(alsa.speaker(file: room.speaker)),
                      "leadingSilenceMs": 4000],
        ]
        let daemon = try await DaemonHarness.start(config: config, token: server.token)
        let watcher = try SocketClient(path: daemon.socket)
        if await watcher.watch()?["status"]?["state"] != "idle" { #expect(await watcher.state("idle") != nil) }
        let question = try Speech.recording("what is the weather like", leadingMs: 300, trailingMs: 0).samples
        let first = Task { try await daemon.result("listen") }
        #expect(await watcher.state("listening") != nil)
        room.say(question)
        #expect(await watcher.state("speaking") != nil)
        // Asked again a second into the answer (its echo heard in the room): the answer gives way at once.
        await room.echoed(atLeast: 16000)
        let second = Task { try await daemon.result("listen") }
        let gaveWay = try await first.value
        #expect(gaveWay["status"] == "cancelled" && gaveWay["reason"] == "superseded", "the first listen: \(gaveWay)")
        #expect(await watcher.state("listening") != nil, "the new turn listens")
        room.say(question)
        let moved = await watcher.next { $0["event"] == "state" && $0["state"] != "listening" }
        #expect(moved?["state"] == "thinking", "the new turn heard the question: \(String(describing: moved))")
        // By then the first answer would have played about four of its ten seconds had it gone on.
        let played = room.echoed
        #expect(played < answerSamples - 3 * 16000, "the answer stopped early: \(played) of \(answerSamples) samples played")
        let heard = try await second.value
        #expect(heard["status"] == "completed", "the second listen heard its question: \(heard)")
        #expect(daemon.stderr.contains("Playback stopped."), "the first answer's playback was cut short, not played out")
        #expect(await daemon.stop() == 0)
    }

    @Test("after two seconds the echo is cancelled by far more than with echoCancel off")
    func erle() async throws {
        let on = try await Self.measure(echoCancel: true)
        let off = try await Self.measure(echoCancel: false)
        print("ERLE in the echo room (echo at \(SignalLevel.rounded(on.heardDBFS)) dBFS): echoCancel on \(SignalLevel.rounded(on.erle)) dB, off \(SignalLevel.rounded(off.erle)) dB")
        #expect(abs(off.erle) < 3, "off, the microphone's audio is what it heard")
        #expect(on.erle > off.erle + 15, "on \(on.erle) dB, off \(off.erle) dB")
    }
}
