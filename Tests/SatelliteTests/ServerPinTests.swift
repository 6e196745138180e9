import Foundation
import Testing
import SatelliteCore
@testable import Satellite

@Suite("the pinned server and the token file", .timeLimit(.minutes(1)))
struct ServerPinTests {
    private static let may1 = WallTime(seconds: 1_714_564_800)

    /// A fresh state folder for one test, removed at the end.
    final class StateFolder {
        let path: String
        init() {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("state-\(UUID().uuidString)").path
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
        var pinFile: String { path + "/pin.json" }
        var tokenFile: String { path + "/token" }
        func write(_ text: String, to file: String) throws {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        }
        func read(_ file: String) -> String? {
            FileManager.default.contents(atPath: file).map { String(decoding: $0, as: UTF8.self) }
        }
        func mode(_ file: String) -> mode_t {
            var info = stat()
            return stat(file, &info) == 0 ? info.st_mode & 0o7777 : 0
        }
    }

    /// The next notice on the bus (they are published before the call that made them returns).
    private func nextNotice(_ events: AsyncStream<SatelliteEvent>) async -> (Priority, String, [String: String])? {
        for await event in events {
            if case .notice(let priority, let message, let fields) = event { return (priority, message, fields) }
        }
        return nil
    }

    @Test("with no pin.json and no server.url there is no server, and the satellite must look")
    func nothingPinned() async {
        let state = StateFolder()
        let pin = ServerPin(stateDirectory: state.path, configuredURL: nil, bus: EventBus())
        #expect(await pin.current() == nil)
        #expect(pin.file == state.pinFile)
    }

    @Test("a pin is written to pin.json (0644, atomically) and read back after a restart")
    func pinSurvivesRestart() async throws {
        let state = StateFolder()
        let bus = EventBus()
        let events = bus.subscribe()
        let pin = ServerPin(stateDirectory: state.path, configuredURL: "", bus: bus, now: { Self.may1 })
        let made = try await pin.pin(url: " http://den.local:8765 ", name: "Parlour on den", how: .paired, tokenSource: .state)
        #expect(made == Pin(url: "http://den.local:8765", name: "Parlour on den", how: .paired,
                            pinnedAt: WallTime(seconds: 1_714_564_800)))
        #expect(await pin.current() == made)
        #expect(state.mode(state.pinFile) == 0o644)
        #expect(try Pin.decode(Array(try #require(state.read(state.pinFile)).utf8), file: state.pinFile) == made)

        let notice = try #require(await nextNotice(events))
        #expect(notice.0 == .notice)
        #expect(notice.1.contains("Pinned Parlour on den at http://den.local:8765 (paired)"))
        #expect(notice.2["how"] == "paired")

        let restarted = ServerPin(stateDirectory: state.path, configuredURL: nil, bus: bus)
        #expect(await restarted.current() == made)
    }

    @Test("an empty name becomes the URL's host; a URL that is not http(s) is refused and nothing is written")
    func nameAndURL() async throws {
        let state = StateFolder()
        let pin = ServerPin(stateDirectory: state.path, configuredURL: nil, bus: EventBus())
        #expect(try await pin.pin(url: "http://[fe80::1]:8765", name: " ", how: .manual, tokenSource: .state).name == "fe80::1")
        await #expect(throws: SatelliteError.self) { try await pin.pin(url: "den.local:8765", name: "Den", how: .manual, tokenSource: .state) }
        #expect(await pin.current()?.url == "http://[fe80::1]:8765")
    }

    @Test("server.url in the config is the server in use, and no pin may replace it")
    func configuredWins() async throws {
        let state = StateFolder()
        try state.write(#"{"url":"http://attic.local:8765","name":"Attic","how":"discovered","pinnedAt":"2024-05-01T12:00:00Z"}"#,
                        to: state.pinFile)
        let pin = ServerPin(stateDirectory: state.path, configuredURL: "http://den.local:8765", bus: EventBus())
        #expect(await pin.current()?.url == "http://den.local:8765")
        #expect(await pin.current()?.how == .configured)
        await #expect(throws: SatelliteError.self) { try await pin.pin(url: "http://x.local", name: "X", how: .paired, tokenSource: .state) }
        #expect(state.read(state.pinFile)?.contains("attic") == true)
    }

    @Test("discovery does not replace a pin; pairing does")
    func discoveryDoesNotReplace() async throws {
        let state = StateFolder()
        let pin = ServerPin(stateDirectory: state.path, configuredURL: nil, bus: EventBus())
        try await pin.pin(url: "http://den.local:8765", name: "Den", how: .manual, tokenSource: .state)
        await #expect(throws: SatelliteError.self) {
            try await pin.pin(url: "http://attic.local:8765", name: "Attic", how: .discovered, tokenSource: .state)
        }
        #expect(await pin.current()?.url == "http://den.local:8765")
        try await pin.pin(url: "http://attic.local:8765", name: "Attic", how: .paired, tokenSource: .state)
        #expect(await pin.current()?.url == "http://attic.local:8765")
    }

    @Test("unpin forgets the pin, removes pin.json and says so; a second unpin has nothing to forget")
    func unpin() async throws {
        let state = StateFolder()
        let bus = EventBus()
        let pin = ServerPin(stateDirectory: state.path, configuredURL: nil, bus: bus)
        let made = try await pin.pin(url: "http://den.local:8765", name: "Den", how: .discovered, tokenSource: .state)
        let events = bus.subscribe()
        #expect(try await pin.unpin() == made)
        #expect(await pin.current() == nil)
        #expect(!FileManager.default.fileExists(atPath: state.pinFile))
        let notice = try #require(await nextNotice(events))
        #expect(notice.1 == "Unpinned Den at http://den.local:8765. Looking for a server again.")
        #expect(try await pin.unpin() == nil)
    }

    @Test("a broken pin.json is reported, naming the file and the way out, treated as no pin, and left in place")
    func brokenPinFile() async throws {
        let state = StateFolder()
        try state.write("{\"url\": \"http://den.local:8765\",", to: state.pinFile)
        let bus = EventBus()
        let events = bus.subscribe()
        let pin = ServerPin(stateDirectory: state.path, configuredURL: nil, bus: bus)
        #expect(await pin.current() == nil)
        let warning = try #require(await nextNotice(events))
        #expect(warning.0 == .warning)
        #expect(warning.1.contains(state.pinFile))
        #expect(warning.1.contains("parlourctl unpin"))
        #expect(warning.2["file"] == state.pinFile)
        #expect(FileManager.default.fileExists(atPath: state.pinFile))

        // unpin is the way out: it removes the broken file.
        #expect(try await pin.unpin() == nil)
        #expect(!FileManager.default.fileExists(atPath: state.pinFile))
    }

    @Test("the token file holds the token alone and a newline, 0600; clear removes it")
    func tokenFile() throws {
        let state = StateFolder()
        try TokenFile.write("  s3cret-token\n", stateDirectory: state.path)
        #expect(state.read(state.tokenFile) == "s3cret-token\n")
        #expect(state.mode(state.tokenFile) == 0o600)
        #expect(state.mode(state.path) & 0o077 == 0)
        #expect(try TokenStore(stateDirectory: state.path, environment: [:]).read(.state) == "s3cret-token")

        try TokenFile.write("other", stateDirectory: state.path)
        #expect(state.read(state.tokenFile) == "other\n")
        #expect(try TokenFile.clear(stateDirectory: state.path) == true)
        #expect(!FileManager.default.fileExists(atPath: state.tokenFile))
        #expect(try TokenFile.clear(stateDirectory: state.path) == false)
    }

    @Test("a token that is empty or has a line break inside is refused", arguments: ["", " \n", "a\nb"])
    func badToken(token: String) {
        let state = StateFolder()
        #expect(throws: SatelliteError.self) { try TokenFile.write(token, stateDirectory: state.path) }
        #expect(!FileManager.default.fileExists(atPath: state.tokenFile))
    }

    @Test("a token that cannot be saved gives an error that names the file and never the token")
    func tokenNotSaved() throws {
        let state = StateFolder()
        // The state "folder" is a file, so nothing can be made inside it.
        try FileManager.default.createDirectory(atPath: (state.path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data("not a folder".utf8).write(to: URL(fileURLWithPath: state.path))
        do {
            try TokenFile.write("s3cret-token", stateDirectory: state.path)
            Issue.record("the write should have failed")
        } catch {
            #expect(error.message.hasPrefix("The token could not be saved ("))
            #expect(error.message.contains(state.path))
            #expect(!error.message.contains("s3cret"))
        }
    }
}
