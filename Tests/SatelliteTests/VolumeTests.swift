// `parlourctl volume` through the real snd_mixer_* calls, on the test card
// mixer (Tests/Fixtures/alsa_mixer.c): its value lives in a file, so what the
// daemon set is read back from the "card" itself, not from the daemon.
import Foundation
import Testing
import SatelliteCore

@Suite("parlourctl volume turns the card's mixer", .timeLimit(.minutes(1)))
struct VolumeTests {
    static func start(mixer: String, control: String = "Master") async throws -> DaemonHarness {
        try await DaemonHarness.start(config: ["transport": "record",
                                               "audio": ["output": "testspeaker", "mixer": .string(control), "mixerCard": .string(mixer)]])
    }

    /// The card's raw values, left and right.
    static func card(_ file: String) throws -> [Int] {
        try String(contentsOfFile: file, encoding: .utf8).split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
    }

    @Test("volume sets every channel to the percentage of the control's range, and reads it back")
    func setAndRead() async throws {
        let alsa = try ALSAFixture.shared()
        let file = alsa.path("volume")
        let daemon = try await Self.start(mixer: alsa.mixer(file: file))
        let first = try await daemon.result("volume")
        #expect(first["response"]?["percent"] == 100, "the card starts at its top")
        #expect(first["response"]?["control"] == "Master")

        let set = try await daemon.ctl("volume", "40")
        #expect(set.status == 0)
        #expect(set.out == "Volume: 40% (Master on \(alsa.mixer(file: file)))\n")
        #expect(try Self.card(file) == [35, 35], "40% of 0...87")
        #expect(try await daemon.result("volume")["response"]?["percent"] == 40)

        // A card of 87 steps cannot hold 50%: the result says what it holds.
        #expect(try await daemon.result("volume", "50")["response"]?["percent"] == 51)
        #expect(try Self.card(file) == [44, 44])
        #expect(try await daemon.result("volume", "0%")["response"]?["percent"] == 0)
        #expect(try Self.card(file) == [0, 0])
        #expect(daemon.stderr.contains("The volume is now 0%."))
        #expect(await daemon.stop() == 0)
    }

    @Test("Master falls back to the controls small cards have")
    func fallback() async throws {
        let alsa = try ALSAFixture.shared()
        let file = alsa.path("volume")
        let daemon = try await Self.start(mixer: alsa.mixer(file: file, control: "Headphone"))
        let set = try await daemon.result("volume", "20")
        #expect(set["response"]?["control"] == "Headphone")
        #expect(try Self.card(file) == [17, 17])
        #expect(await daemon.stop() == 0)
    }

    @Test("a control the card does not have is speaker_unavailable naming the card and the controls it has")
    func missingControl() async throws {
        let alsa = try ALSAFixture.shared()
        let file = alsa.path("volume")
        let card = alsa.mixer(file: file, control: "Headphone")
        let daemon = try await Self.start(mixer: card, control: "Speaker")
        let done = try await daemon.ctl("volume", "30")
        #expect(done.status == 1)
        #expect(done.err == "Error: The card \(card) has no playback volume control named Speaker; it has Headphone. "
            + "Set audio.mixer to one of them.\n")
        #expect(try await daemon.result("volume")["error"] == "speaker_unavailable")
        #expect(!FileManager.default.fileExists(atPath: file), "nothing was written to the card")
        #expect(await daemon.stop() == 0)
    }

    @Test("a card with no mixer at all is speaker_unavailable naming it")
    func noMixer() async throws {
        let daemon = try await Self.start(mixer: "hw:29")
        let result = try await daemon.result("volume")
        #expect(result["error"] == "speaker_unavailable")
        #expect(result["message"]?.stringValue?.contains("hw:29") == true)
        #expect(result["message"]?.stringValue?.contains("audio.mixerCard") == true)
        #expect(await daemon.stop() == 0)
    }
}
