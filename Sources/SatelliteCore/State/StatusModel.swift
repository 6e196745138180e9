// What `parlourctl status` shows, folded from the events on the bus: status is
// a reader of the same facts as the journal, never a second source of truth.

/// The satellite's status as INTERFACE.md shapes it.
public struct StatusModel: Sendable, Equatable {
    public var state: SatelliteState = .starting
    public var name: String
    public var room: String
    public var transport: String
    public var wake: String
    public var muted = false
    public var version: String
    public var server = ServerHealth()
    public var bonjour: String?
    public var microphone: DeviceHealth
    public var speaker: DeviceHealth
    /// With `wake` `local` only: the model and whether it works.
    public var wakeWord: WakeWordHealth?
    /// Set by the daemon from the config, its siblings from SiblingDirectory.
    public var arbitration = ArbitrationHealth(enabled: false)

    public init(name: String, room: String, transport: String, wake: String, version: String,
                microphone: String, speaker: String) {
        self.name = name
        self.room = room
        self.transport = transport
        self.wake = wake
        self.version = version
        self.microphone = DeviceHealth(device: microphone)
        self.speaker = DeviceHealth(device: speaker)
    }

    /// Folds one event in.
    public mutating func apply(_ event: SatelliteEvent) {
        switch event {
        case .state(let s, _): state = s
        case .room(let r): room = r
        case .muted(let m): muted = m
        case .microphone(let d): microphone = d
        case .speaker(let d): speaker = d
        case .server(let s): server = s
        // Discovery says when avahi-daemon comes or goes with a "bonjour" field on its notice.
        case .notice(_, _, let fields): if let word = fields["bonjour"] { bonjour = word }
        case .wakeWord(let w): wakeWord = w
        case .wake, .arbitration, .followUp, .heard, .reply, .finished: break
        }
    }

    public var json: JSONValue {
        var fields: [String: JSONValue] = [
            "state": .string(state.rawValue), "name": .string(name), "room": .string(room),
            "transport": .string(transport), "wake": .string(wake), "muted": .bool(muted),
            "version": .string(version), "server": server.json, "bonjour": .from(bonjour),
            "microphone": microphone.json, "speaker": speaker.json, "arbitration": arbitration.json]
        // Only with a local wake word: every other status keeps its shape.
        if let wakeWord { fields["wakeWord"] = wakeWord.json }
        return .object(fields)
    }
}
