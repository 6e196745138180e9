import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("config file")
struct ConfigTests {
    private func decode(_ text: String, hostName: String = "den.local") throws(ConfigError) -> LoadedConfig {
        try ConfigLoader.decode(Array(text.utf8), file: "satellite.json", hostName: hostName)
    }

    private func error(_ text: String) -> String? {
        do { _ = try decode(text); return nil } catch { return error.description }
    }

    @Test("an empty object gives every default and no warning")
    func emptyObject() throws {
        let loaded = try decode("{}")
        #expect(loaded.config == .defaults(hostName: "den.local"))
        #expect(loaded.warnings.isEmpty)
    }

    @Test("the defaults are the ones INTERFACE.md documents")
    func documentedDefaults() {
        let expected = SatelliteConfig(
            name: "den", room: "", server: .init(url: "", retryMs: 15000), transport: .stream, wake: .server,
            audio: .init(input: "default", output: "default", silenceMs: 800, maxUtteranceMs: 15000, leadingSilenceMs: 2500))
        #expect(SatelliteConfig.defaults(hostName: "den.local") == expected)
    }

    @Test("config/satellite.json holds every key at its default, with the name empty for the host name")
    func exampleFile() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../config/satellite.json").standardized
        let data = try FileSystem.read(url.path)
        let loaded = try ConfigLoader.decode(data, file: url.path, hostName: "den.local")
        #expect(loaded.config == .defaults(hostName: "den.local"))
        #expect(loaded.warnings.isEmpty)

        // The file is what json() writes, so regenerating it from the code changes nothing.
        var fields = try #require(SatelliteConfig.defaults(hostName: "den").json().objectValue)
        fields["name"] = ""
        #expect(String(decoding: data, as: UTF8.self) == JSONValue.object(fields).prettyText + "\n")
    }

    @Test("every key is read from the file")
    func everyKey() throws {
        let loaded = try decode("""
            {"name": "kitchen-pi", "room": "Kitchen", "transport": "record", "wake": "local",
             "wakeWord": {"model": "/opt/words/hey_house.json", "cutoff": 0.7, "refractoryMs": 3000},
             "server": {"url": "https://parlour.example:8443", "retryMs": 60000},
             "audio": {"input": "plughw:1,0", "output": "hw:0", "silenceMs": 1200, "maxUtteranceMs": 30000,
                       "leadingSilenceMs": 4000, "mixer": "Speaker", "mixerCard": "hw:1"}}
            """)
        #expect(loaded.warnings.isEmpty)
        #expect(loaded.config == SatelliteConfig(
            name: "kitchen-pi", room: "Kitchen", server: .init(url: "https://parlour.example:8443", retryMs: 60000),
            transport: .record, wake: .local,
            wakeWord: .init(model: "/opt/words/hey_house.json", cutoff: 0.7, refractoryMs: 3000),
            audio: .init(input: "plughw:1,0", output: "hw:0", silenceMs: 1200, maxUtteranceMs: 30000,
                         leadingSilenceMs: 4000, mixer: "Speaker", mixerCard: "hw:1")))
    }

    @Test("the conversation keys are read, each at its default when left out")
    func conversationKeys() throws {
        #expect(try decode("{}").config.conversation == FollowUp(mode: .question, waitMs: 5000, maxInARow: 3))
        let config = try decode(#"{"conversation": {"followUp": "always", "followUpMs": 1000, "maxFollowUps": 0}}"#).config
        #expect(config.conversation == FollowUp(mode: .always, waitMs: 1000, maxInARow: 0))
        #expect(try decode(#"{"conversation": {"followUp": "never", "followUpMs": 15000, "maxFollowUps": 10}}"#).config.conversation
            == FollowUp(mode: .never, waitMs: 15000, maxInARow: 10))
    }

    @Test("the arbitration keys are read, each at its default when left out")
    func arbitrationKeys() throws {
        #expect(try decode("{}").config.arbitration
            == SatelliteConfig.Arbitration(enabled: true, windowMs: 200, port: 0, levelOffsetDb: 0))
        let config = try decode(#"{"arbitration": {"enabled": false, "windowMs": 50, "port": 47800, "levelOffsetDb": -6.5}}"#).config
        #expect(config.arbitration == SatelliteConfig.Arbitration(enabled: false, windowMs: 50, port: 47800, levelOffsetDb: -6.5))
        #expect(try decode(#"{"arbitration": {"windowMs": 1000, "port": 65535, "levelOffsetDb": 30}}"#).config.arbitration
            == SatelliteConfig.Arbitration(enabled: true, windowMs: 1000, port: 65535, levelOffsetDb: 30))
    }

    @Test("json() writes every key and reads back to the same config")
    func roundTrip() throws {
        var config = SatelliteConfig.defaults(hostName: "den")
        config.room = "Den"
        config.server.url = "http://parlour.local:8765"
        config.wake = .push
        config.audio.silenceMs = 500
        let json = config.json()
        #expect(json["server"]?["url"] == "http://parlour.local:8765")
        #expect(json["audio"]?.objectValue?.count == 10)
        #expect(try decode(json.text, hostName: "elsewhere").config == config)
    }

    @Test("the name defaults to the host name before its first dot", arguments: [
        ("den.local", "den"), ("den", "den"), ("kitchen-pi.home.arpa", "kitchen-pi"), ("", ""),
    ])
    func shortHostName(hostName: String, name: String) throws {
        #expect(SatelliteConfig.defaults(hostName: hostName).name == name)
        #expect(try decode(#"{"name": ""}"#, hostName: hostName).config.name == name)
    }

    @Test("names, rooms and device names are trimmed of spaces")
    func trimmed() throws {
        let config = try decode(#"{"name": " den ", "room": " Den ", "audio": {"input": " hw:1 "}}"#).config
        #expect(config.name == "den")
        #expect(config.room == "Den")
        #expect(config.audio.input == "hw:1")
    }

    @Test("a server address is stored without its trailing slash, with the scheme in lower case", arguments: [
        ("", ""),
        ("http://parlour.local:8765", "http://parlour.local:8765"),
        ("http://parlour.local:8765/", "http://parlour.local:8765"),
        ("HTTPS://den.example", "https://den.example"),
        ("http://192.0.2.7:8765", "http://192.0.2.7:8765"),
        ("http://[::1]:8765", "http://[::1]:8765"),
    ])
    func serverURL(given: String, stored: String) throws {
        #expect(try decode(#"{"server": {"url": "\#(given)"}}"#).config.server.url == stored)
    }

    @Test("a wrong value names the file, the key path, what was expected and what was found", arguments: [
        (#"{"audio": {"silenceMs": "800"}}"#,
         #"satellite.json: audio.silenceMs: expected a whole number of milliseconds from 100 to 10000, found "800""#),
        (#"{"audio": {"silenceMs": 12.5}}"#,
         "satellite.json: audio.silenceMs: expected a whole number of milliseconds from 100 to 10000, found 12.5"),
        (#"{"audio": {"silenceMs": 99}}"#,
         "satellite.json: audio.silenceMs: expected a whole number of milliseconds from 100 to 10000, found 99"),
        (#"{"audio": {"maxUtteranceMs": 120001}}"#,
         "satellite.json: audio.maxUtteranceMs: expected a whole number of milliseconds from 1000 to 120000, found 120001"),
        (#"{"audio": {"leadingSilenceMs": null}}"#,
         "satellite.json: audio.leadingSilenceMs: expected a whole number of milliseconds from 500 to 60000, found null"),
        (#"{"server": {"retryMs": 999}}"#,
         "satellite.json: server.retryMs: expected a whole number of milliseconds from 1000 to 3600000, found 999"),
        (#"{"server": {"retryMs": true}}"#,
         "satellite.json: server.retryMs: expected a whole number of milliseconds from 1000 to 3600000, found true"),
        (#"{"audio": {"silenceMs": 5000, "maxUtteranceMs": 5000}}"#,
         "satellite.json: audio.maxUtteranceMs: expected more than audio.silenceMs (5000), found 5000"),
        (#"{"transport": "websocket"}"#,
         #"satellite.json: transport: expected "stream" or "record", found "websocket""#),
        (#"{"wake": ["push"]}"#,
         #"satellite.json: wake: expected "server", "push" or "local", found an array"#),
        (#"{"wakeWord": {"model": "okay_nabo"}}"#,
         #"satellite.json: wakeWord.model: expected "okay_nabu", "hey_jarvis", "alexa" or "hey_mycroft" (the models shipped with the package), or the absolute path of a microWakeWord manifest (.json, its .tflite beside it), found "okay_nabo""#),
        (#"{"wakeWord": {"model": "words/hey.json"}}"#,
         #"satellite.json: wakeWord.model: expected "okay_nabu", "hey_jarvis", "alexa" or "hey_mycroft" (the models shipped with the package), or the absolute path of a microWakeWord manifest (.json, its .tflite beside it), found "words/hey.json""#),
        (#"{"wakeWord": {"cutoff": 1}}"#,
         "satellite.json: wakeWord.cutoff: expected a number between 0 and 1 (higher: fewer false wakes, more missed ones), or null for the model's own, found 1"),
        (#"{"wakeWord": {"cutoff": "0.5"}}"#,
         #"satellite.json: wakeWord.cutoff: expected a number between 0 and 1 (higher: fewer false wakes, more missed ones), or null for the model's own, found "0.5""#),
        (#"{"wakeWord": {"refractoryMs": 60001}}"#,
         "satellite.json: wakeWord.refractoryMs: expected a whole number of milliseconds from 0 to 60000, found 60001"),
        (#"{"wakeWord": "okay_nabu"}"#,
         #"satellite.json: wakeWord: expected an object with the keys model, cutoff, refractoryMs, found "okay_nabu""#),
        (#"{"name": 7}"#, "satellite.json: name: expected a string, found 7"),
        (#"{"conversation": {"followUp": "questions"}}"#,
         #"satellite.json: conversation.followUp: expected "question", "never" or "always", found "questions""#),
        (#"{"conversation": {"followUpMs": 999}}"#,
         "satellite.json: conversation.followUpMs: expected a whole number of milliseconds from 1000 to 15000, found 999"),
        (#"{"conversation": {"followUpMs": 15001}}"#,
         "satellite.json: conversation.followUpMs: expected a whole number of milliseconds from 1000 to 15000, found 15001"),
        (#"{"conversation": {"maxFollowUps": 11}}"#,
         "satellite.json: conversation.maxFollowUps: expected a whole number from 0 to 10, found 11"),
        (#"{"conversation": {"maxFollowUps": -1}}"#,
         "satellite.json: conversation.maxFollowUps: expected a whole number from 0 to 10, found -1"),
        (#"{"arbitration": {"enabled": "yes"}}"#, #"satellite.json: arbitration.enabled: expected true or false, found "yes""#),
        (#"{"arbitration": {"windowMs": 49}}"#,
         "satellite.json: arbitration.windowMs: expected a whole number of milliseconds from 50 to 1000, found 49"),
        (#"{"arbitration": {"windowMs": 1001}}"#,
         "satellite.json: arbitration.windowMs: expected a whole number of milliseconds from 50 to 1000, found 1001"),
        (#"{"arbitration": {"port": 65536}}"#,
         "satellite.json: arbitration.port: expected 0 (any free port, which Bonjour advertises) or a UDP port from 1 to 65535, found 65536"),
        (#"{"arbitration": {"port": -1}}"#,
         "satellite.json: arbitration.port: expected 0 (any free port, which Bonjour advertises) or a UDP port from 1 to 65535, found -1"),
        (#"{"arbitration": {"port": 80.5}}"#,
         "satellite.json: arbitration.port: expected 0 (any free port, which Bonjour advertises) or a UDP port from 1 to 65535, found 80.5"),
        (#"{"arbitration": {"levelOffsetDb": 30.5}}"#,
         "satellite.json: arbitration.levelOffsetDb: expected a number of dB from -30 to 30, found 30.5"),
        (#"{"arbitration": {"levelOffsetDb": "-3"}}"#,
         #"satellite.json: arbitration.levelOffsetDb: expected a number of dB from -30 to 30, found "-3""#),
        (#"{"arbitration": 200}"#,
         "satellite.json: arbitration: expected an object with the keys enabled, windowMs, port, levelOffsetDb, found 200"),
        (#"{"name": "   "}"#,
         #"satellite.json: name: expected a name of 1 to 64 characters, or "" for the short host name, found "   ""#),
        (#"{"name": "\#(String(repeating: "n", count: 65))"}"#,
         #"satellite.json: name: expected a name of 1 to 64 characters, or "" for the short host name, found "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...""#),
        (#"{"name": "den\nx"}"#,
         #"satellite.json: name: expected a name of 1 to 64 characters, or "" for the short host name, found "den\nx""#),
        (#"{"room": "\#(String(repeating: "r", count: 41))"}"#,
         #"satellite.json: room: expected a room name of at most 40 characters, or "" for none, found "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr""#),
        (#"{"audio": {"input": ""}}"#,
         #"satellite.json: audio.input: expected an ALSA device name such as "default" or "plughw:1,0", found """#),
        (#"{"audio": {"output": " "}}"#,
         #"satellite.json: audio.output: expected an ALSA device name such as "default" or "plughw:1,0", found " ""#),
        (#"{"audio": "default"}"#,
         #"satellite.json: audio: expected an object with the keys input, output, silenceMs, maxUtteranceMs, leadingSilenceMs, mixer, mixerCard, echoCancel, noiseSuppression, autoGain, found "default""#),
        (#"{"audio": {"echoCancel": "no"}}"#, #"satellite.json: audio.echoCancel: expected true or false, found "no""#),
        (#"{"audio": {"noiseSuppression": 1}}"#, "satellite.json: audio.noiseSuppression: expected true or false, found 1"),
        (#"{"audio": {"autoGain": null}}"#, "satellite.json: audio.autoGain: expected true or false, found null"),
        (#"{"audio": {"mixer": ""}}"#,
         #"satellite.json: audio.mixer: expected a mixer control name such as "Master", "PCM" or "Speaker" (amixer scontrols lists them), found """#),
        (#"{"audio": {"mixerCard": 1}}"#, "satellite.json: audio.mixerCard: expected a string, found 1"),
        (#"{"server": "http://parlour.local:8765"}"#,
         #"satellite.json: server: expected an object with the keys url, retryMs, followMoves, found "http://parlour.local:8765""#),
    ])
    func wrongValue(text: String, message: String) {
        #expect(error(text) == message)
    }

    @Test("a server address must be the server alone, and the error says why", arguments: [
        ("parlour.local:8765",
         #"expected "" (find the server with Bonjour) or an http:// or https:// address such as "http://parlour.local:8765", found "parlour.local:8765""#),
        ("ws://parlour.local:8765",
         #"expected "" (find the server with Bonjour) or an http:// or https:// address such as "http://parlour.local:8765", found "ws://parlour.local:8765""#),
        ("http://",
         #"expected "" (find the server with Bonjour) or an http:// or https:// address such as "http://parlour.local:8765", found "http://""#),
        ("http://parlour.local:8765/v1",
         #"expected the server's address with no path, such as "http://parlour.local:8765" (the satellite adds /v1 and /listen itself), found "http://parlour.local:8765/v1""#),
        ("http://parlour.local:8765/?token=abc",
         #"expected an address with no query ("?..."), such as "http://parlour.local:8765", found "http://parlour.local:8765/?token=abc""#),
        ("http://parlour.local:8765#top",
         ##"expected an address with no fragment ("#..."), such as "http://parlour.local:8765", found "http://parlour.local:8765#top""##),
        ("http://parlour.local:70000", #"expected an address whose port is from 1 to 65535, found "http://parlour.local:70000""#),
        ("http://me:secret@parlour.local:8765",
         #"expected an address without "user:password@" (the satellite's only credential is its token, and it goes to the server alone), found an address with a user name or password in it"#),
    ])
    func badServerURL(url: String, message: String) {
        #expect(error(#"{"server": {"url": "\#(url)"}}"#) == "satellite.json: server.url: " + message)
    }

    @Test("a password in the server address is never quoted back, even one no URL may hold", arguments: [
        "http://me:secret@parlour.local/v1?x#y", "http://me:hunter 2@den.local:8765", "http://me:pässword@den.local",
        "http://me:100%@den.local", "http://me:a{b}@den.local", "http://me:a|b@den.local",
    ])
    func passwordNotEchoed(url: String) throws {
        let message = try #require(error(#"{"server": {"url": "\#(url)"}}"#))
        let password = url.split(separator: "@")[0].split(separator: ":").last.map(String.init) ?? ""
        #expect(!message.contains(password), "\(message)")
        #expect(message.hasSuffix("found an address with a user name or password in it"))
    }

    @Test("a link-local address's zone as people write it is written as a URL has it")
    func zoneAsWritten() throws {
        #expect(try decode(#"{"server": {"url": "http://[fe80::1%eth0]:8765"}}"#).config.server.url == "http://[fe80::1%25eth0]:8765")
        #expect(try decode(#"{"server": {"url": "http://[fe80::1%25eth0]:8765"}}"#).config.server.url == "http://[fe80::1%25eth0]:8765")
    }

    @Test("a host that is no host name once its escapes are undone is refused", arguments: [
        "http://den%FF.local:8765", "http://den%0D%0AX:%20y.local", "http://den%2Flocal",
    ])
    func hostNotAName(url: String) {
        #expect(error(#"{"server": {"url": "\#(url)"}}"#)?.contains("expected \"\" (find the server with Bonjour)") == true)
    }

    @Test("the same bad file always reports the same first error")
    func firstErrorIsStable() {
        let text = #"{"wake": 1, "audio": {"silenceMs": "x", "input": 2}, "name": 3}"#
        #expect(error(text) == #"satellite.json: audio.input: expected a string, found 2"#)
    }

    @Test("a whole file that is not a config is an error without a key path", arguments: [
        ("", "satellite.json: the file is empty; write {} for all defaults"),
        (" \n", "satellite.json: the file is empty; write {} for all defaults"),
        ("[]", "satellite.json: expected a JSON object such as {}, found an array"),
        (#""name""#, #"satellite.json: expected a JSON object such as {}, found "name""#),
        ("null", "satellite.json: expected a JSON object such as {}, found null"),
    ])
    func wholeFile(text: String, message: String) {
        #expect(error(text) == message)
    }

    @Test("text that is not JSON names the file and the parser's reason", arguments: [
        "{name: 1}", "{", #"{"a": 1} x"#, #"{"a": 'b'}"#,
    ])
    func notJSON(text: String) throws {
        do {
            _ = try decode(text)
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.keyPath == nil)
            #expect(error.description.hasPrefix("satellite.json: it is not valid JSON ("))
        }
    }

    @Test("unknown keys are ignored with a warning naming the full path, and a near miss is suggested", arguments: [
        (#"{"audio": {"inptu": "hw:1"}}"#,
         [#"satellite.json: unknown key "audio.inptu" is ignored; did you mean "audio.input"?"#]),
        (#"{"transprot": "record"}"#,
         [#"satellite.json: unknown key "transprot" is ignored; did you mean "transport"?"#]),
        (#"{"audio": {"silencems": 900}}"#,
         [#"satellite.json: unknown key "audio.silencems" is ignored; did you mean "audio.silenceMs"?"#]),
        (#"{"silenceMs": 900}"#,
         [#"satellite.json: unknown key "silenceMs" is ignored; did you mean "audio.silenceMs"?"#]),
        (#"{"Server": {}}"#,
         [#"satellite.json: unknown key "Server" is ignored; did you mean "server"?"#]),
        (#"{"sounds": {"wake": "ding.wav"}, "server": {"token": "x"}}"#,
         [#"satellite.json: unknown key "server.token" is ignored."#,
          #"satellite.json: unknown key "sounds.wake" is ignored; did you mean "sounds.awake"?"#]),
        (#"{"mixer": {"volume": 80}}"#,
         [#"satellite.json: unknown key "mixer" is ignored; did you mean "audio.mixer"?"#]),
        (#"{"volume": {"level": 80}}"#,
         [#"satellite.json: unknown key "volume" is ignored."#]),
    ])
    func unknownKeys(text: String, warnings: [String]) throws {
        let loaded = try decode(text)
        #expect(loaded.warnings == warnings)
        #expect(loaded.config == .defaults(hostName: "den.local"))
    }
}

@Suite("config file on disk")
struct ConfigLoadTests {
    private let folder: URL

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    private func cleanUp() { try? FileManager.default.removeItem(at: folder) }

    @Test("a file that exists is read and checked")
    func readsFile() throws {
        defer { cleanUp() }
        let path = folder.appendingPathComponent("satellite.json").path
        try Data(#"{"room": "Den", "colour": "red"}"#.utf8).write(to: URL(fileURLWithPath: path))
        let loaded = try ConfigLoader.load(path: path, explicit: true, hostName: "den")
        #expect(loaded.config.room == "Den")
        #expect(loaded.warnings == ["\(path): unknown key \"colour\" is ignored."])
    }

    @Test("a missing default file means every default, with a warning")
    func missingDefault() throws {
        defer { cleanUp() }
        let path = folder.appendingPathComponent("satellite.json").path
        let loaded = try ConfigLoader.load(path: path, explicit: false, hostName: "den")
        #expect(loaded.config == .defaults(hostName: "den"))
        #expect(loaded.warnings == [
            "\(path): the file does not exist, so every setting is at its default; copy config/satellite.json there to change them.",
        ])
    }

    @Test("a missing file that was named explicitly is an error")
    func missingExplicit() {
        defer { cleanUp() }
        let path = folder.appendingPathComponent("satellite.json").path
        #expect(throws: ConfigError(file: path, keyPath: nil, message:
            "the file does not exist; write {} to it for all defaults, or point --config or PARLOUR_SATELLITE_CONFIG at the right file"
        )) {
            try ConfigLoader.load(path: path, explicit: true, hostName: "den")
        }
    }

    @Test("a folder in place of the file is an error")
    func folderInstead() {
        defer { cleanUp() }
        #expect(throws: ConfigError(file: folder.path, keyPath: nil,
                                    message: "it is a folder, not a file; name the satellite.json inside it")) {
            try ConfigLoader.load(path: folder.path, explicit: false, hostName: "den")
        }
    }

    @Test("a zero-byte file is an error, not the defaults")
    func zeroBytes() throws {
        defer { cleanUp() }
        let path = folder.appendingPathComponent("satellite.json").path
        try Data().write(to: URL(fileURLWithPath: path))
        #expect(throws: ConfigError(file: path, keyPath: nil, message: "the file is empty; write {} for all defaults")) {
            try ConfigLoader.load(path: path, explicit: false, hostName: "den")
        }
    }
}

@Suite("suggestions for typos")
struct SuggestionTests {
    @Test("edit distance counts insertions, deletions and substitutions", arguments: [
        ("", "", 0), ("abc", "", 3), ("", "ab", 2), ("input", "inptu", 2), ("status", "stauts", 2), ("kitten", "sitting", 3),
    ])
    func distance(a: String, b: String, expected: Int) {
        #expect(Suggestion.editDistance(a, b) == expected)
        #expect(Suggestion.editDistance(b, a) == expected)
    }

    @Test("nothing is suggested when every name is more than two edits away")
    func tooFar() {
        #expect(Suggestion.closest(to: "microphone", among: ["input", "output"]) == nil)
    }

    /// A 64 KiB unknown key once cost a full edit-distance table against every known name;
    /// names whose lengths differ by more than the distance are now skipped without one.
    @Test("a length two apart is still a typo, three apart or a 64 KiB key is not")
    func lengthBound() {
        #expect(Suggestion.closest(to: "inputxx", among: ["input"]) == "input")
        #expect(Suggestion.closest(to: "INPU", among: ["input"]) == "input")
        #expect(Suggestion.closest(to: "inputxxx", among: ["input"]) == nil)
        #expect(Suggestion.closest(to: "input" + String(repeating: "x", count: 65_000), among: ["input"]) == nil)
    }
}

@Suite("config: hooks, sounds and the offline voice")
struct ConfigExtrasTests {
    private func decode(_ text: String) throws(ConfigError) -> SatelliteConfig {
        try ConfigLoader.decode(Array(text.utf8), file: "satellite.json", hostName: "den").config
    }

    @Test("each key is read")
    func read() throws {
        let config = try decode("""
            {"hooks": {"onState": "/usr/local/bin/led.sh 'led 0'", "timeoutMs": 2000},
             "sounds": {"awake": "/usr/share/sounds/ding.wav", "done": "", "error": "builtin"},
             "offline": {"speak": false, "voice": "de", "text": " Das Haus ist nicht erreichbar. "}}
            """)
        #expect(config.hooks == .init(onState: "/usr/local/bin/led.sh 'led 0'", timeoutMs: 2000))
        #expect(config.sounds == .init(awake: "/usr/share/sounds/ding.wav", done: "", error: "builtin"))
        #expect(config.offline == .init(speak: false, voice: "de", text: "Das Haus ist nicht erreichbar."))
    }

    @Test("the defaults: no hook, 5 s, the built-in sounds, English, speaking")
    func defaults() {
        let config = SatelliteConfig.defaults(hostName: "den")
        #expect(config.hooks == .init(onState: "", timeoutMs: 5000))
        #expect(config.sounds == .init(awake: "builtin", done: "builtin", error: "builtin"))
        #expect(config.offline == .init(speak: true, voice: "en", text: "I can't reach the house right now."))
    }

    @Test("a wrong value names the key and what was expected", arguments: [
        (#"{"hooks": {"onState": "led.sh > /tmp/log"}}"#,
         #"satellite.json: hooks.onState: expected "" for no hook, or a command such as "/usr/share/parlour-satellite/hooks/led.sh led0", found "led.sh > /tmp/log", in which > outside quotes means something to a shell"#),
        (#"{"hooks": {"onState": "./led.sh"}}"#,
         #"satellite.json: hooks.onState: expected "" for no hook, or a command such as "/usr/share/parlour-satellite/hooks/led.sh led0", found "./led.sh", in which the program ./led.sh is a relative path"#),
        (#"{"hooks": {"onState": ["led.sh"]}}"#, "satellite.json: hooks.onState: expected a string, found an array"),
        (#"{"hooks": {"timeoutMs": 50}}"#, "satellite.json: hooks.timeoutMs: expected a whole number of milliseconds from 100 to 600000, found 50"),
        (#"{"sounds": {"awake": "ding.wav"}}"#,
         #"satellite.json: sounds.awake: expected "builtin", "" for no sound, or the absolute path of a WAV file, found "ding.wav""#),
        (#"{"sounds": {"error": false}}"#, "satellite.json: sounds.error: expected a string, found false"),
        (#"{"offline": {"speak": "yes"}}"#, #"satellite.json: offline.speak: expected true or false, found "yes""#),
        (#"{"offline": {"voice": " "}}"#,
         #"satellite.json: offline.voice: expected an espeak-ng language or voice name such as "en", "en-us" or "de", found " ""#),
        (#"{"offline": {"text": ""}}"#, #"satellite.json: offline.text: expected a sentence of 1 to 200 characters, found """#),
        (#"{"offline": "off"}"#, #"satellite.json: offline: expected an object with the keys speak, voice, text, found "off""#),
    ])
    func refused(text: String, message: String) {
        do {
            _ = try decode(text)
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.description.hasPrefix(message), "\(error.description)")
        }
    }
}
