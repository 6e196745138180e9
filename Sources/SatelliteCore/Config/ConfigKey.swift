// One row per key of satellite.json: where it sits, what it accepts, how it is
// written back. A new setting is a property on SatelliteConfig and one row in
// `all`; the loader walks the file against this table, so wrong values and
// unknown keys are named by their full path without code of their own.


/// A value a key refused: what the key expected, and how to show what was found
/// when quoting the value itself would be wrong (it may hold a password).
struct Rejection: Error {
    let expected: String
    let found: String?

    init(_ expected: String, found: String? = nil) {
        self.expected = expected
        self.found = found
    }

    func message(for value: JSONValue) -> String {
        "expected \(expected), found \(found ?? Rejection.describe(value))"
    }

    /// A value as a person would recognise it in their file: strings quoted (long ones cut), containers by kind.
    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .string(let s) where s.count > 60: JSONValue.string(s.prefix(57) + "...").text
        case .array, .object: value.kindName
        default: value.text
        }
    }
}

/// A key of satellite.json that holds a value (not an object of keys).
struct ConfigKey: Sendable {
    /// Dotted path, such as `audio.silenceMs`.
    let path: String
    /// Checks the value from the file and stores it.
    let read: @Sendable (JSONValue, inout SatelliteConfig) throws(Rejection) -> Void
    /// The value as the file would hold it.
    let render: @Sendable (SatelliteConfig) -> JSONValue

    /// Every key, in the order errors and the example file name them.
    static let all: [ConfigKey] = [
        .string("name", \.name, check: name),
        .string("room", \.room, check: room),
        .string("server.url", \.server.url, check: serverURL),
        .milliseconds("server.retryMs", \.server.retryMs, 1_000...3_600_000),
        .flag("server.followMoves", \.server.followMoves),
        .choice("transport", \.transport),
        .choice("wake", \.wake),
        .string("wakeWord.model", \.wakeWord.model, check: wakeWordModel),
        ConfigKey(path: "wakeWord.cutoff", read: { value, config throws(Rejection) in
            if value == .null { config.wakeWord.cutoff = nil; return }
            guard let cutoff = value.numberValue, cutoff > 0, cutoff < 1 else {
                throw Rejection("a number between 0 and 1 (higher: fewer false wakes, more missed ones), or null for the model's own")
            }
            config.wakeWord.cutoff = cutoff
        }, render: { $0.wakeWord.cutoff.map(JSONValue.number) ?? .null }),
        .milliseconds("wakeWord.refractoryMs", \.wakeWord.refractoryMs, 0...60_000),
        .string("audio.input", \.audio.input, check: deviceName),
        .string("audio.output", \.audio.output, check: deviceName),
        .milliseconds("audio.silenceMs", \.audio.silenceMs, 100...10_000),
        .milliseconds("audio.maxUtteranceMs", \.audio.maxUtteranceMs, 1_000...120_000),
        .milliseconds("audio.leadingSilenceMs", \.audio.leadingSilenceMs, 500...60_000),
        .string("audio.mixer", \.audio.mixer, check: mixerControl),
        .string("audio.mixerCard", \.audio.mixerCard, check: mixerCard),
        .flag("audio.echoCancel", \.audio.echoCancel),
        .flag("audio.noiseSuppression", \.audio.noiseSuppression),
        .flag("audio.autoGain", \.audio.autoGain),
        .flag("arbitration.enabled", \.arbitration.enabled),
        .milliseconds("arbitration.windowMs", \.arbitration.windowMs, 50...1_000),
        ConfigKey(path: "arbitration.port", read: { value, config throws(Rejection) in
            guard let port = value.intValue, (0...65_535).contains(port) else {
                throw Rejection("0 (any free port, which Bonjour advertises) or a UDP port from 1 to 65535")
            }
            config.arbitration.port = port
        }, render: { .number(Double($0.arbitration.port)) }),
        ConfigKey(path: "arbitration.levelOffsetDb", read: { value, config throws(Rejection) in
            guard let offset = value.numberValue, (-30...30).contains(offset) else {
                throw Rejection("a number of dB from -30 to 30")
            }
            config.arbitration.levelOffsetDb = offset
        }, render: { .number($0.arbitration.levelOffsetDb) }),
        .string("hooks.onState", \.hooks.onState, check: hookCommand),
        .milliseconds("hooks.timeoutMs", \.hooks.timeoutMs, 100...600_000),
        .string("sounds.awake", \.sounds.awake, check: sound),
        .string("sounds.done", \.sounds.done, check: sound),
        .string("sounds.error", \.sounds.error, check: sound),
        .flag("offline.speak", \.offline.speak),
        .string("offline.voice", \.offline.voice, check: voiceName),
        .string("offline.text", \.offline.text, check: noticeText),
        .choice("conversation.followUp", \.conversation.mode),
        .milliseconds("conversation.followUpMs", \.conversation.waitMs, 1_000...15_000),
        .count("conversation.maxFollowUps", \.conversation.maxInARow, 0...10),
    ]

    /// Checks that involve more than one key, run after every key is read; the path is the key blamed.
    static let rules: [(path: String, check: @Sendable (SatelliteConfig) throws(Rejection) -> Void)] = [
        ("audio.maxUtteranceMs", { config throws(Rejection) in
            guard config.audio.maxUtteranceMs > config.audio.silenceMs else {
                throw Rejection("more than audio.silenceMs (\(config.audio.silenceMs))")
            }
        }),
    ]
}

// MARK: - Kinds of key

extension ConfigKey {
    /// A string key; `check` returns the value to store, or nil to keep the default.
    static func string(_ path: String, _ field: WritableKeyPath<SatelliteConfig, String> & Sendable,
                       check: @escaping @Sendable (String) throws(Rejection) -> String?) -> ConfigKey {
        ConfigKey(path: path, read: { value, config throws(Rejection) in
            guard let text = value.stringValue else { throw Rejection("a string") }
            if let kept = try check(text) { config[keyPath: field] = kept }
        }, render: { .string($0[keyPath: field]) })
    }

    static func milliseconds(_ path: String, _ field: WritableKeyPath<SatelliteConfig, Int> & Sendable,
                             _ range: ClosedRange<Int>) -> ConfigKey {
        whole(path, field, range, "a whole number of milliseconds")
    }

    static func count(_ path: String, _ field: WritableKeyPath<SatelliteConfig, Int> & Sendable,
                      _ range: ClosedRange<Int>) -> ConfigKey {
        whole(path, field, range, "a whole number")
    }

    /// A whole number in `range`; `what` says what kind, as the error shows it.
    private static func whole(_ path: String, _ field: WritableKeyPath<SatelliteConfig, Int> & Sendable,
                              _ range: ClosedRange<Int>, _ what: String) -> ConfigKey {
        ConfigKey(path: path, read: { value, config throws(Rejection) in
            guard let number = value.intValue, range.contains(number) else {
                throw Rejection("\(what) from \(range.lowerBound) to \(range.upperBound)")
            }
            config[keyPath: field] = number
        }, render: { .number(Double($0[keyPath: field])) })
    }

    /// A key that is `true` or `false`.
    static func flag(_ path: String, _ field: WritableKeyPath<SatelliteConfig, Bool> & Sendable) -> ConfigKey {
        ConfigKey(path: path, read: { value, config throws(Rejection) in
            guard let flag = value.boolValue else { throw Rejection("true or false") }
            config[keyPath: field] = flag
        }, render: { .bool($0[keyPath: field]) })
    }

    /// A key that takes one word from a closed set, such as `transport`.
    static func choice<Choice: RawRepresentable & CaseIterable & Sendable>(
        _ path: String, _ field: WritableKeyPath<SatelliteConfig, Choice> & Sendable
    ) -> ConfigKey where Choice.RawValue == String {
        ConfigKey(path: path, read: { value, config throws(Rejection) in
            guard let word = value.stringValue, let choice = Choice(rawValue: word) else {
                let words = Choice.allCases.map { "\"\($0.rawValue)\"" }
                throw Rejection(words.dropLast().joined(separator: ", ") + " or " + words.last!)
            }
            config[keyPath: field] = choice
        }, render: { .string($0[keyPath: field].rawValue) })
    }
}

// MARK: - Checks

extension ConfigKey {
    static func name(_ text: String) throws(Rejection) -> String? {
        // "" is what the example file holds: the short host name, already the default.
        if text.isEmpty { return nil }
        let trimmed = text.trimmingSpaces()
        guard !trimmed.isEmpty, trimmed.count <= 64, !hasControlCharacters(trimmed) else {
            throw Rejection("a name of 1 to 64 characters, or \"\" for the short host name")
        }
        return trimmed
    }

    static func room(_ text: String) throws(Rejection) -> String? {
        guard let name = RoomName.clean(text) else {
            throw Rejection("a room name of at most \(RoomName.maxLength) characters, or \"\" for none")
        }
        return name
    }

    static func deviceName(_ text: String) throws(Rejection) -> String? {
        let trimmed = text.trimmingSpaces()
        guard !trimmed.isEmpty, !hasControlCharacters(trimmed) else {
            throw Rejection("an ALSA device name such as \"default\" or \"plughw:1,0\"")
        }
        return trimmed
    }

    /// A simple mixer control's name, as ALSA keeps it (at most 44 bytes with its " Playback Volume").
    static func mixerControl(_ text: String) throws(Rejection) -> String? {
        let trimmed = text.trimmingSpaces()
        guard !trimmed.isEmpty, trimmed.utf8.count <= 28, !hasControlCharacters(trimmed) else {
            throw Rejection("a mixer control name such as \"Master\", \"PCM\" or \"Speaker\" (amixer scontrols lists them)")
        }
        return trimmed
    }

    static func mixerCard(_ text: String) throws(Rejection) -> String? {
        let trimmed = text.trimmingSpaces()
        guard !hasControlCharacters(trimmed) else {
            throw Rejection("\"\" (the card of audio.output) or an ALSA card such as \"hw:1\" or \"default\"")
        }
        return trimmed
    }

    /// `""`, or `http(s)://host[:port]` stored without a trailing slash so that routes can be appended.
    static func serverURL(_ text: String) throws(Rejection) -> String? {
        if text.isEmpty { return "" }
        let example = "such as \"http://parlour.local:8765\""
        // Checked first, before anything quotes the value back: it may hold a password.
        if ServerAddress.userInfo(in: text) {
            throw Rejection("an address without \"user:password@\" (the satellite's only credential is its token,"
                + " and it goes to the server alone)", found: "an address with a user name or password in it")
        }
        guard let parts = URLParts(zoneEscaped(text)), case let scheme = parts.scheme.lowercased(),
              scheme == "http" || scheme == "https",
              URLParts.isHostName(parts.name)
        else {
            throw Rejection("\"\" (find the server with Bonjour) or an http:// or https:// address \(example)")
        }
        if !(parts.percentEncodedPath.isEmpty || parts.percentEncodedPath == "/") {
            throw Rejection("the server's address with no path, \(example) (the satellite adds /v1 and /listen itself)")
        }
        if parts.percentEncodedQuery != nil { throw Rejection("an address with no query (\"?...\"), \(example)") }
        if parts.fragment != nil { throw Rejection("an address with no fragment (\"#...\"), \(example)") }
        if let port = parts.port, !(1...65_535).contains(port) {
            throw Rejection("an address whose port is from 1 to 65535")
        }
        return "\(scheme)://\(parts.authority)"
    }

    /// A link-local address's zone as people write it, `[fe80::1%eth0]`, as RFC 6874 has it in a URL: `%25eth0`.
    static func zoneEscaped(_ text: String) -> String {
        guard let open = text.firstIndex(of: "["), let close = text[open...].firstIndex(of: "]"),
              let percent = text[open..<close].firstIndex(of: "%"), !text[percent...].hasPrefix("%25") else { return text }
        return String(text[..<percent]) + "%25" + String(text[text.index(after: percent)...])
    }

    /// A command line the satellite can split without a shell (ShellWords); kept as written.
    static func hookCommand(_ text: String) throws(Rejection) -> String? {
        do {
            _ = try HookCommand.words(text)
        } catch {
            throw Rejection("\"\" for no hook, or a command such as \"/usr/share/parlour-satellite/hooks/led.sh led0\"",
                            found: "\(Rejection.describe(.string(text))), in which \(error.description)")
        }
        return text
    }

    /// `"builtin"`, `""` (no sound) or an absolute path; the file itself is read at start (CueSounds).
    static func sound(_ text: String) throws(Rejection) -> String? {
        if text.isEmpty || text == SatelliteConfig.Sounds.builtin { return text }
        guard text.hasPrefix("/"), !hasControlCharacters(text) else {
            throw Rejection("\"builtin\", \"\" for no sound, or the absolute path of a WAV file")
        }
        return text
    }

    /// A shipped model's name, or the absolute path of a manifest; the files themselves are read at start (WakeWordEngine).
    static func wakeWordModel(_ text: String) throws(Rejection) -> String? {
        if WakeWordFolder.shippedModels.contains(text) { return text }
        guard text.hasPrefix("/"), text.hasSuffix(".json"), !hasControlCharacters(text) else {
            let names = WakeWordFolder.shippedModels.map { "\"\($0)\"" }
            throw Rejection(names.dropLast().joined(separator: ", ") + " or " + names.last!
                + " (the models shipped with the package), or the absolute path of a microWakeWord manifest (.json, its .tflite beside it)")
        }
        return text
    }

    static func voiceName(_ text: String) throws(Rejection) -> String? {
        let trimmed = text.trimmingSpaces()
        guard !trimmed.isEmpty, trimmed.count <= 64, !hasControlCharacters(trimmed) else {
            throw Rejection("an espeak-ng language or voice name such as \"en\", \"en-us\" or \"de\"")
        }
        return trimmed
    }

    static func noticeText(_ text: String) throws(Rejection) -> String? {
        let trimmed = text.trimmed()
        guard !trimmed.isEmpty, trimmed.count <= 200, !hasControlCharacters(trimmed) else {
            throw Rejection("a sentence of 1 to 200 characters")
        }
        return trimmed
    }

    private static func hasControlCharacters(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.isControlCharacter }
    }
}

// MARK: - Shape of the file

extension ConfigKey {
    static let byPath: [String: ConfigKey] = Dictionary(uniqueKeysWithValues: all.map { ($0.path, $0) })

    /// The names directly inside an object path (`""` is the top level), in table order; nil when
    /// the path is not an object of keys.
    static func children(of object: String) -> [String]? {
        let prefix = object.isEmpty ? "" : object + "."
        var names: [String] = []
        for key in all where key.path.hasPrefix(prefix) {
            let name = String(key.path.dropFirst(prefix.count).prefix { $0 != "." })
            if !names.contains(name) { names.append(name) }
        }
        return names.isEmpty ? nil : names
    }

    /// Every path a file may hold: the keys and the objects around them.
    static let knownPaths: [String] = {
        var paths: [String] = []
        for key in all {
            let parts = key.path.split(separator: ".")
            for end in 1...parts.count {
                let path = parts[..<end].joined(separator: ".")
                if !paths.contains(path) { paths.append(path) }
            }
        }
        return paths
    }()
}
