// `parlourctl setup` on a real pseudo-terminal, against a real daemon and the
// project's test server: paste a pairing link, watch the meter move as the room
// speaks, set the room, finish; then again with Enter for every default; by
// hand with a token typed without echo; and refused without a terminal.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("setup", .serialized, .timeLimit(.minutes(2)))
struct SetupTests {
    static let config: JSONValue = ["name": "study-pi", "transport": "record", "server": ["retryMs": 2000],
                                    "audio": ["input": "testmic", "output": "testspeaker"]]

    static func file(_ daemon: DaemonHarness, _ name: String) -> String? {
        try? String(contentsOfFile: daemon.stateDirectory + "/" + name, encoding: .utf8)
    }

    /// The meter's readings, in the order drawn.
    static func meterReadings(_ transcript: String) -> [Double] {
        transcript.split(whereSeparator: { $0 == "\r" || $0 == "\n" }).compactMap { line in
            guard line.hasPrefix("["), let close = line.firstIndex(of: "]") else { return nil }
            let figure = line[line.index(after: close)...].trimmingCharacters(in: .whitespaces).split(separator: " ").first
            return figure.flatMap { Double($0) }
        }
    }

    @Test("all four steps: a pasted link, the meter moving, the room; then a second run where Enter keeps everything")
    func walkThrough() async throws {
        let server = try await TestServer.start(name: "Parlour on den")
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config, fifoMic: true)
        // The room speaks as soon as the meter opens the microphone (it stays closed until then).
        daemon.room?.say(try await Speech.raw("turn off the kitchen lights", before: 0.3, after: 0.5))
        let link = PairingTests.link(server.url, token: server.token, name: "Parlour on den")

        let first = try await PseudoTerminal.parlourctl(["setup"], steps: [
            .expect("Step 1 of 4, Connect"),
            .expect("Pairing link, 2 or 3 [Enter skips for now]: "), .send(link + "\n"),
            .expect("Pair with Parlour on den? Everything you ask will go to \(server.url)."),
            .expect("Pair? [Y/n]: "), .send("\n"),
            .expect("Paired with Parlour on den at \(server.url) (paired)."),
            .expect("Step 2 of 4, Voice"),
            .expect("Press Enter to start listening [or type skip]: "), .send("\n"),
            .expect("The microphone hears you"),
            .expect("Press Enter to go on [or type again to listen again]: "), .send("\n"),
            .expect("Room [Enter leaves it unset]: "), .send("kitchen\n"),
            .expect("The room is now kitchen."),
            .expect("Step 3 of 4, Extras"),
            .expect("Step 4 of 4, Finish"),
            .expect("All set."),
        ], environment: daemon.environment)
        #expect(first.error == nil, "\(first.error ?? "")\n\(first.transcript)")
        #expect(first.status == 0)
        #expect(first.transcript.contains("Room        kitchen"))
        #expect(first.transcript.contains("Microphone  \(DoctorTests.device(daemon)): heard you (loudest"))

        // The meter moved: silence first, then the voice.
        let readings = Self.meterReadings(first.transcript)
        #expect(readings.count >= 40, "\(readings.count) readings")
        #expect(readings.first == SignalLevel.floorDBFS)
        #expect((readings.max() ?? -100) > -40, "\(readings)")

        // What was set is really stored.
        let pin = try Pin.decode(Array((Self.file(daemon, "pin.json") ?? "").utf8), file: "pin.json")
        #expect(pin.url == server.url && pin.how == .paired && pin.name == "Parlour on den")
        #expect(Self.file(daemon, "token") == server.token + "\n")
        let status = try await daemon.result("status")["response"]
        #expect(status?["room"] == "kitchen")
        #expect(status?["server"]?["how"] == "paired")
        #expect(!daemon.stderr.contains(server.token))

        // Again, with Enter for every default: nothing changes, nothing is asked twice.
        let pinBefore = Self.file(daemon, "pin.json")
        let second = try await PseudoTerminal.parlourctl(["setup"], steps: [
            .expect("This satellite is set up already: it uses Parlour on den at \(server.url) (paired), in the kitchen."),
            .expect("Pairing link, 2 or 3 [Enter keeps Parlour on den]: "), .send("\n"),
            .expect("Kept Parlour on den"),
            .expect("Press Enter to start listening [or type skip]: "), .send("\n"),
            .expect("Press Enter to go on [or type again to listen again]: "), .send("\n"),
            .expect("Room [Enter keeps kitchen]: "), .send("\n"),
            .expect("All set."),
        ], environment: daemon.environment)
        #expect(second.error == nil, "\(second.error ?? "")\n\(second.transcript)")
        #expect(second.status == 0)
        #expect(Self.file(daemon, "pin.json") == pinBefore)
        #expect(Self.file(daemon, "token") == server.token + "\n")
        #expect(try await daemon.result("status")["response"]?["room"] == "kitchen")
        await daemon.stop()
    }

    @Test("by hand: the server refuses a wrong token there and then; the token typed is never shown")
    func byHand() async throws {
        let server = try await TestServer.start(token: "right-\(UUID().uuidString.prefix(8))")
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config, mic: Speech.silence(1))
        let wrong = "wrong-\(UUID().uuidString.prefix(8))"
        let session = try await PseudoTerminal.parlourctl(["setup"], steps: [
            .expect("Pairing link, 2 or 3 [Enter skips for now]: "), .send("3\n"),
            .expect("Address (such as den.local:8765) [Enter goes back]: "), .send(String(server.url.dropFirst("http://".count)) + "\n"),
            .expect("127.0.0.1 answers, and asks for a token this satellite does not have yet."),
            .expect("Token [Enter goes back]: "), .send(wrong + "\n"),
            .expect("does not take the token this satellite has."),
            .expect("Token [Enter goes back]: "), .send(server.token + "\n"),
            .expect("Paired with 127.0.0.1 at \(server.url) (manual)."),
            .expect("Press Enter to start listening [or type skip]: "), .send("skip\n"),
            .expect("Room [Enter leaves it unset]: "), .send("\n"),
            .expect("All set."),
        ], environment: daemon.environment)
        #expect(session.error == nil, "\(session.error ?? "")\n\(session.transcript)")
        #expect(session.status == 0)
        #expect(!session.transcript.contains(wrong) && !session.transcript.contains(server.token), "typed without echo")
        #expect(session.transcript.contains("Microphone  \(DoctorTests.device(daemon)): not tried."))
        #expect(Self.file(daemon, "token") == server.token + "\n")
        let pin = try Pin.decode(Array((Self.file(daemon, "pin.json") ?? "").utf8), file: "pin.json")
        #expect(pin.how == .manual && pin.url == server.url)
        await daemon.stop()
    }

    @Test("Ctrl-D stops setup at once, exit 3, and changes nothing")
    func stopped() async throws {
        let daemon = try await DaemonHarness.start(config: Self.config, mic: Speech.silence(1))
        let session = try await PseudoTerminal.parlourctl(["setup"], steps: [
            .expect("Pairing link, 2 or 3 [Enter skips for now]: "), .send("\u{04}"),
            .expect("Setup stopped."),
        ], environment: daemon.environment)
        #expect(session.error == nil, "\(session.error ?? "")\n\(session.transcript)")
        #expect(session.status == 3)
        #expect(Self.file(daemon, "pin.json") == nil)
        await daemon.stop()
    }

    @Test("without a terminal setup refuses, exit 1, and says what to run instead")
    func noTerminal() async throws {
        let daemon = try await DaemonHarness.start(config: Self.config, mic: Speech.silence(1))
        for input in [nil, "parlour://pair?url=x\n"] as [String?] {
            let done = try await daemon.ctl("setup", input: input)
            #expect(done.status == 1)
            #expect(done.err.contains("parlourctl pair -"))
            #expect(done.err.contains("parlourctl room NAME"))
            #expect(done.out.isEmpty)
        }
        let json = try await daemon.result("setup")
        #expect(json["error"] == "invalid_request")
        await daemon.stop()
    }
}
