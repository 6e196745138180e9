// The same rooms in every wake mode: a real daemon answers twice in a room with
// an echo (EchoRoom), and `meter` reports what its microphone hears after
// processing while each answer plays; the room knows what it put into the
// microphone before. Their ratio is the echo return loss enhancement (ERLE):
// over the first answer from two seconds in, over the second from half a second
// in (the speaker and the microphone kept open between them, so the echo's path holds), in push turns
// (80 ms periods), with the local ear (120 ms) and streaming to a server that wakes (80 ms). Noise suppression and gain are
// off, so the figure is the cancellers' alone; with cancelling off it is 0 dB.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("echo cancelled alike in every wake mode and room", .serialized, .timeLimit(.minutes(10)))
struct EchoModesTests {
    struct Room: Sendable, CustomTestStringConvertible {
        let delayMs: Int
        let gainDB: Double
        let reverb: [String]
        var inverted = false
        var testDescription: String {
            "\(reverb.isEmpty ? "dry" : "reverberant") room, echo \(Int(-gainDB)) dB down, \(delayMs) ms late\(inverted ? ", inverted" : "")"
        }
    }

    static let rooms = [Room(delayMs: 100, gainDB: -12, reverb: ["40", "50", "60"]), Room(delayMs: 250, gainDB: -6, reverb: [])]
    static let answer = "The weather today is mostly sunny with a light breeze from the west, and temperatures reaching "
        + "twenty degrees by the afternoon, with rain tomorrow."

    /// The ERLE (dB) of each of two answers, the echo's level (dBFS) as the microphone heard it, and how
    /// many times the speaker and the microphone were opened to be kept open (the journal says each).
    struct Figures {
        var first = 0.0, second = 0.0, echoDBFS = 0.0
        var speakerOpenings = 0, microphoneOpenings = 0
        /// What moved the room's echo path over each answer (and, for the second, since the first).
        var moved: [EchoRoom.Glitches] = []
    }

    /// Two answers in `room` with `wake`; each turn asked as that mode asks one.
    static func measure(_ room: Room, wake: String) async throws -> Figures {
        let directory = try Package.temporaryDirectory("echo-modes")
        defer { try? FileManager.default.removeItem(at: directory) }
        let samples = try Speech.recording(answer, leadingMs: 0, trailingMs: 200).samples
        let answerPath = directory.appendingPathComponent("answer.wav").path
        try Data(WAV.encode(PCMAudio(sampleRate: 16000, channels: 1, samples: samples))).write(to: URL(fileURLWithPath: answerPath))
        // The test server's wake word is any 240 ms of sound: it would take the echo of an answer's first
        // words, which nothing cancels before it has been heard, for a wake, stop the answer and answer
        // again, so that no answer plays long enough to be measured. It listens from two seconds into
        // an answer (the time the aim gives the first), and so hears what is left of the echo after.
        let server = try await TestServer.start(knobs: ["audioFile": .string(answerPath), "wake": wake == "server" ? "loud" : "never",
                                                        "speakingHoldMs": 2000])
        defer { server.stop() }
        let echoRoom = try EchoRoom(directory: directory.path, delayMs: room.delayMs, gainDB: room.gainDB, reverb: room.reverb,
                                    inverted: room.inverted)
        defer { echoRoom.stop() }
        let alsa = try ALSAFixture.shared()
        let config: JSONValue = [
            "name": "pi", "transport": "stream", "wake": .string(wake), "server": ["url": .string(server.url)],
            "audio": ["input": .string(alsa.microphone(infile: echoRoom.microphone)), "output": .string(alsa.speaker(file: echoRoom.speaker)),
                      "leadingSilenceMs": 4000, "echoCancel": true, "noiseSuppression": false, "autoGain": false],
        ]
        let daemon = try await DaemonHarness.start(config: config, token: server.token)
        let watcher = try SocketClient(path: daemon.socket)
        if await watcher.watch()?["status"]?["state"] != "idle" { #expect(await watcher.state("idle") != nil) }
        let question = Speech.samples(try await Speech.raw("what is the weather like", before: 0.3, after: 1.5))
        var figures = Figures()
        var echo: [Double] = []
        var since: EchoRoom.Glitches?
        for turn in 0..<2 {
            // The server's wake hears the room; otherwise the turn is pushed, as parlourctl listen does.
            var listen: Task<Finished, any Error>?
            if wake != "server" {
                listen = Task { try await daemon.ctl("listen") }
                #expect(await watcher.state("listening") != nil)
            }
            echoRoom.say(question)
            #expect(await watcher.next { $0["event"] == "state" && $0["state"] == "speaking" } != nil, "turn \(turn) is answered")
            if since == nil { since = echoRoom.glitches }
            let levels = await meter(daemon, seconds: 7)
            if let listen {
                let listened = try await listen.value
                #expect(listened.status == 0, "listen: \(listened.out) \(listened.err)")
            }
            #expect(await watcher.state("idle") != nil)
            let now = echoRoom.glitches
            figures.moved.append(now.since(since ?? now))
            since = now
            // What the room put into the microphone in each window: it is read `holdMs` after it was written.
            let hold = Duration.milliseconds(echoRoom.holdMs)
            let heardLevels = levels.map { echoRoom.heardDBFS(from: $0.at - .milliseconds(100) - hold, to: $0.at - hold) ?? -120 }
            // The answer counts from its echo's first sound; the first from 2 s on, the second from half a second.
            guard let onset = heardLevels.firstIndex(where: { $0 > -60 }) else {
                Issue.record("answer \(turn + 1)'s echo was not heard")
                continue
            }
            let from = onset + (turn == 0 ? 20 : 5)
            #expect(levels.count >= from + 20, "the meter measured the answer: \(levels.count) windows, from \(from)")
            guard levels.count > from + 10 else { continue }
            func mean(_ dbfs: [Double]) -> Double { 10 * log10(max(dbfs.reduce(0) { $0 + pow(10, $1 / 10) } / Double(dbfs.count), 1e-12)) }
            let processed = mean(levels[from...].map(\.dbfs)), heard = mean(Array(heardLevels[from...]))
            echo.append(heard)
            let erle = heard - processed
            if erle < 25 {
                print("answer \(turn + 1), every 100 ms: processed \(levels.map { Int($0.dbfs) }) dBFS, heard \(heardLevels.map { Int($0) }) dBFS")
            }
            if turn == 0 { figures.first = erle } else { figures.second = erle }
        }
        figures.echoDBFS = echo.max() ?? -120
        figures.speakerOpenings = daemon.stderr.components(separatedBy: "The speaker is kept open while the echo is cancelled").count - 1
        figures.microphoneOpenings = daemon.stderr.components(separatedBy: "The microphone is kept open while the echo is cancelled").count - 1
        if await daemon.stop() != 0 || figures.first < 25 || figures.second < 25 || figures.microphoneOpenings != 1 { print(daemon.stderr) }
        print("ERLE, \(room.testDescription), wake \(wake): first answer \(SignalLevel.rounded(figures.first)) dB, "
              + "second \(SignalLevel.rounded(figures.second)) dB (echo at \(SignalLevel.rounded(figures.echoDBFS)) dBFS); "
              + "the room: \(figures.moved.map(\.description).joined(separator: "; then "))")
        return figures
    }

    /// `seconds` of `meter` levels (dBFS, each 100 ms), with when each came.
    static func meter(_ daemon: DaemonHarness, seconds: Int) async -> [(at: ContinuousClock.Instant, dbfs: Double)] {
        guard let meter = try? SocketClient(path: daemon.socket) else { return [] }
        meter.send(#"{"v": 1, "id": "m", "cmd": "meter", "seconds": \#(seconds), "processed": true}"# + "\n")
        var levels: [(at: ContinuousClock.Instant, dbfs: Double)] = []
        for await line in meter.lines {
            guard let value = try? JSONValue.parse(line) else { continue }
            if value["event"] == "level", let rms = value["rms"]?.numberValue { levels.append((.now, rms)) }
            if value["id"] == "m" { break }
        }
        return levels
    }

    // The aim, 25 dB, is asked of each answer over which the room held its echo's path. The test room
    // can move it as a room on one card never does: a period its late reader no longer found (lost), or
    // its FIFO found empty (the reader may have been given silence). A card would report either as an
    // overrun, and the daemon would measure the delay again; here nothing tells it, and the cancellers
    // are off the echo until they learn it again (one 20 ms loss took a later answer to 8 dB). Such an
    // answer is recorded, not failed. (Before the room held its path through a late sox and a late
    // reader, CI saw later answers of 14.6 to 23 dB in the reverberant room: docs/echo-cancel.md.)
    static func expectAim(_ erle: Double, room moved: EchoRoom.Glitches?, _ what: String) {
        guard let moved, moved.movesPath else {
            #expect(erle >= 25, "\(what): \(erle) dB")
            return
        }
        withKnownIssue("the test room moved the echo's path: \(moved)", isIntermittent: true) { #expect(erle >= 25, "\(what): \(erle) dB") }
    }

    @Test("the echo is cancelled from two seconds into the first answer and half a second into the next",
          arguments: ["push", "local", "server"])
    func everyMode(_ wake: String) async throws {
        for room in Self.rooms {
            let figures = try await Self.measure(room, wake: wake)
            #expect(figures.echoDBFS > -45, "the echo was heard: \(figures.echoDBFS) dBFS")
            Self.expectAim(figures.first, room: figures.moved.first, "\(room.testDescription), wake \(wake): first answer")
            Self.expectAim(figures.second, room: figures.moved.last, "\(room.testDescription), wake \(wake): second answer")
            // One speaker and one microphone for both answers, their cues and every turn: opened once, at
            // the start, and kept open.
            #expect(figures.speakerOpenings == 1, "the speaker was opened to be kept \(figures.speakerOpenings) times")
            #expect(figures.microphoneOpenings == 1, "the microphone was opened to be kept \(figures.microphoneOpenings) times")
        }
    }

    @Test("an echo of inverted polarity is found and cancelled")
    func inverted() async throws {
        var room = Self.rooms[1]
        room.inverted = true
        let figures = try await Self.measure(room, wake: "push")
        Self.expectAim(figures.first, room: figures.moved.first, "first answer")
        Self.expectAim(figures.second, room: figures.moved.last, "second answer")
    }
}
