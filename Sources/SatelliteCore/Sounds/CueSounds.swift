// The sound of each cue, read once when the daemon starts: the built-in tone, a
// WAV file from the config, or none. A file that is missing, unreadable, not a
// WAV this satellite can play, or too long stops the daemon with the key named,
// rather than failing quietly the first time someone speaks.

/// The sounds played for the cues, in memory.
public struct CueSounds: Sendable, Equatable {
    public var sounds: [Cue: PCMAudio]

    public init(_ sounds: [Cue: PCMAudio] = [:]) {
        self.sounds = sounds
    }

    /// A cue is a moment's signal, not an answer: anything longer is refused.
    public static let longestMs = 5_000

    public subscript(cue: Cue) -> PCMAudio? { sounds[cue] }

    /// Reads every cue's sound; `configFile` names the file in errors.
    public static func load(_ settings: SatelliteConfig.Sounds, configFile: String) throws(ConfigError) -> CueSounds {
        var loaded = CueSounds()
        for cue in Cue.allCases {
            let setting = settings[cue]
            switch setting {
            case "": continue
            case SatelliteConfig.Sounds.builtin: loaded.sounds[cue] = cue.builtin
            default: loaded.sounds[cue] = try file(setting, for: cue, configFile: configFile)
            }
        }
        return loaded
    }

    private static func file(_ path: String, for cue: Cue, configFile: String) throws(ConfigError) -> PCMAudio {
        func refuse(_ why: String) -> ConfigError {
            ConfigError(file: configFile, keyPath: cue.configKey, message: "expected a WAV file of at most 5 s, found \(path), which \(why)")
        }
        let data: [UInt8]
        do {
            data = try FileSystem.read(path)
        } catch {
            throw refuse(FileSystem.exists(path)
                ? "cannot be read (\(error.fileReason)); make it readable by the user the daemon runs as" : "does not exist")
        }
        let audio: PCMAudio
        do {
            audio = try WAV.decode(data)
        } catch {
            throw refuse("is not a WAV this satellite can play: \(error)")
        }
        if audio.frameCount == 0 { throw refuse("holds no sound") }
        let ms = audio.frameCount * 1000 / max(audio.sampleRate, 1)
        if ms > longestMs { throw refuse("lasts \(ms) ms") }
        return audio
    }
}
