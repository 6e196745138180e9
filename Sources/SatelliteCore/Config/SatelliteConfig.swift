// The settings in satellite.json as plain values, already checked. Everything
// downstream reads this and never the JSON, so a setting is validated once;
// the keys themselves (names, ranges, defaults in the file) live in ConfigKey.

/// The satellite's settings (INTERFACE.md, "Config").
public struct SatelliteConfig: Sendable, Equatable {
    /// How audio reaches the server.
    public enum Transport: String, Sendable, CaseIterable {
        /// Hold the `/listen` WebSocket open.
        case stream
        /// Post each utterance to `/voice`.
        case record
    }

    /// Who decides when to listen.
    public enum Wake: String, Sendable, CaseIterable {
        /// Stream the room (stream transport); the server listens for the wake word.
        case server
        /// Send audio only after `parlourctl listen` (or a button).
        case push
        /// The satellite listens for its own wake word (either transport) and sends nothing before it.
        case local
    }

    /// The local wake word (docs/wake-word.md), used when `wake` is `local`.
    public struct WakeWord: Sendable, Equatable {
        /// A model shipped with the package (`WakeWordFolder.shippedModels`), or a manifest's absolute path.
        public var model: String
        /// Overrides the manifest's `probability_cutoff`; nil: the manifest's.
        public var cutoff: Double?
        /// After a wake, the wake word is ignored this long.
        public var refractoryMs: Int

        public init(model: String = "okay_nabu", cutoff: Double? = nil, refractoryMs: Int = 2_000) {
            self.model = model
            self.cutoff = cutoff
            self.refractoryMs = refractoryMs
        }
    }

    public struct Server: Sendable, Equatable {
        /// Empty: find the server with Bonjour, then pin it. Set: use only this server.
        /// Always `http(s)://host[:port]`, with no trailing slash.
        public var url: String
        /// The cap of the reconnect back-off.
        public var retryMs: Int
        /// Follow the pinned server to a new address its own Bonjour instance announces while the
        /// old one does not answer (plain http), or that its pinned key proves (https); false: a person decides.
        public var followMoves: Bool

        public init(url: String, retryMs: Int, followMoves: Bool = true) {
            self.url = url
            self.retryMs = retryMs
            self.followMoves = followMoves
        }
    }

    public struct Audio: Sendable, Equatable {
        /// ALSA capture device name.
        public var input: String
        /// ALSA playback device name.
        public var output: String
        /// Silence that ends an utterance the satellite endpoints itself.
        public var silenceMs: Int
        /// The longest utterance.
        public var maxUtteranceMs: Int
        /// Give up (`nothing_heard`) when no speech starts within this.
        public var leadingSilenceMs: Int
        /// The simple mixer control `parlourctl volume` turns; "Master" falls back (MixerSelection).
        public var mixer: String
        /// The mixer's card (a ctl name such as `hw:1`); empty: the card of `output`.
        public var mixerCard: String
        /// Cancel what the speaker plays from what the microphone hears (docs/echo-cancel.md).
        public var echoCancel = true
        /// Suppress steady noise in the microphone's audio.
        public var noiseSuppression = true
        /// Level a quiet or distant talker.
        public var autoGain = false

        public init(input: String, output: String, silenceMs: Int, maxUtteranceMs: Int, leadingSilenceMs: Int,
                    mixer: String = "Master", mixerCard: String = "") {
            self.input = input
            self.output = output
            self.silenceMs = silenceMs
            self.maxUtteranceMs = maxUtteranceMs
            self.leadingSilenceMs = leadingSilenceMs
            self.mixer = mixer
            self.mixerCard = mixerCard
        }
    }

    /// The state hook (docs/hooks.md).
    public struct Hooks: Sendable, Equatable {
        /// The command run on every state change, split like a shell would but run without one; `""`: none.
        public var onState: String
        /// How long a hook may run before it is stopped.
        public var timeoutMs: Int

        public init(onState: String = "", timeoutMs: Int = 5_000) {
            self.onState = onState
            self.timeoutMs = timeoutMs
        }
    }

    /// The short sounds that mark listening, its end and errors (docs/sounds.md).
    public struct Sounds: Sendable, Equatable {
        /// `"builtin"` for the satellite's own sound, `""` for none, or an absolute path to a WAV file.
        public var awake: String
        public var done: String
        public var error: String

        public static let builtin = "builtin"

        public init(awake: String = builtin, done: String = builtin, error: String = builtin) {
            self.awake = awake
            self.done = done
            self.error = error
        }

        /// The setting for one cue.
        public subscript(cue: Cue) -> String {
            switch cue {
            case .awake: awake
            case .done: done
            case .error: error
            }
        }
    }

    /// What the satellite says itself when the house cannot be reached (docs/offline-voice.md).
    public struct Offline: Sendable, Equatable {
        /// Whether it says anything at all.
        public var speak: Bool
        /// An espeak-ng language or voice name, such as `en`, `en-us` or `de`.
        public var voice: String
        /// The sentence it says.
        public var text: String

        public static let defaultText = "I can't reach the house right now."

        public init(speak: Bool = true, voice: String = "en", text: String = defaultText) {
            self.speak = speak
            self.voice = voice
            self.text = text
        }
    }

    /// Deciding with the house's other satellites which one answers a wake (docs/arbitration.md).
    public struct Arbitration: Sendable, Equatable {
        public var enabled: Bool
        /// How long a satellite that woke waits for its siblings' claims.
        public var windowMs: Int
        /// The UDP port for siblings' claims; 0: any free port, which Bonjour advertises.
        public var port: Int
        /// Added to this satellite's level, to even out a louder or quieter microphone.
        public var levelOffsetDb: Double

        public init(enabled: Bool = true, windowMs: Int = 200, port: Int = 0, levelOffsetDb: Double = 0) {
            self.enabled = enabled
            self.windowMs = windowMs
            self.port = port
            self.levelOffsetDb = levelOffsetDb
        }
    }

    /// The client name the server sees. Never empty: `""` in the file means the short host name.
    public var name: String
    /// The room it stands in; empty means none.
    public var room: String
    public var server: Server
    public var transport: Transport
    public var wake: Wake
    public var wakeWord: WakeWord
    public var audio: Audio
    public var arbitration: Arbitration
    public var hooks: Hooks
    public var sounds: Sounds
    public var offline: Offline
    /// Listening again without the wake word after an answer that asks something (docs/follow-up.md).
    public var conversation: FollowUp

    public init(name: String, room: String, server: Server, transport: Transport, wake: Wake, wakeWord: WakeWord = WakeWord(),
                audio: Audio, arbitration: Arbitration = Arbitration(), hooks: Hooks = Hooks(), sounds: Sounds = Sounds(), offline: Offline = Offline(),
                conversation: FollowUp = FollowUp()) {
        self.conversation = conversation
        self.name = name
        self.room = room
        self.server = server
        self.transport = transport
        self.wake = wake
        self.wakeWord = wakeWord
        self.audio = audio
        self.arbitration = arbitration
        self.hooks = hooks
        self.sounds = sounds
        self.offline = offline
    }

    /// Every setting at its default, named after the host.
    public static func defaults(hostName: String) -> SatelliteConfig {
        SatelliteConfig(
            name: shortHostName(hostName),
            room: "",
            server: Server(url: "", retryMs: 15_000),
            transport: .stream,
            wake: .server,
            audio: Audio(input: "default", output: "default", silenceMs: 800, maxUtteranceMs: 15_000,
                         leadingSilenceMs: 2_500, mixer: "Master", mixerCard: ""))
    }

    /// The host name up to its first dot: `den.local` is `den`.
    public static func shortHostName(_ hostName: String) -> String {
        String(hostName.prefix { $0 != "." })
    }

    /// The config as satellite.json with every key, nested the way the file nests it.
    public func json() -> JSONValue {
        var root: [String: JSONValue] = [:]
        for key in ConfigKey.all {
            root.insert(key.render(self), at: key.path.split(separator: ".").map(String.init))
        }
        return .object(root)
    }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// Sets a value at a key path, making the objects on the way.
    fileprivate mutating func insert(_ value: JSONValue, at path: [String]) {
        guard let first = path.first else { return }
        if path.count == 1 { self[first] = value; return }
        var inner = self[first]?.objectValue ?? [:]
        inner.insert(value, at: Array(path.dropFirst()))
        self[first] = .object(inner)
    }
}
