// What the satellite is told at run time and keeps over a restart, as kept in
// <state>/settings.json: whether it is muted, and a room set with `parlourctl
// room`. Easy to get wrong: the config has a `room` too. The later change wins:
// a room set here remembers the config's room it overrode, and once the config's
// room is edited to something else, the config's wins again (an admin who edits
// the file expects the file to count).

/// The satellite's own settings, kept in settings.json.
public struct LocalSettings: Sendable, Equatable {
    /// A room set with `parlourctl room`, and the config's room when it was set.
    public struct Room: Sendable, Equatable {
        public var name: String
        public var configRoom: String

        public init(name: String, configRoom: String) {
            self.name = name
            self.configRoom = configRoom
        }
    }

    /// The microphone stays closed: nothing is streamed or recorded.
    public var muted: Bool
    public var room: Room?

    public init(muted: Bool = false, room: Room? = nil) {
        self.muted = muted
        self.room = room
    }

    /// The room every request names: the one set with parlourctl while the config's room is still
    /// the one it overrode, else the config's.
    public func room(config configRoom: String) -> String {
        guard let room, room.configRoom == configRoom else { return configRoom }
        return room.name
    }

    /// Whether a room set with parlourctl was overridden by an edit of the config since.
    public func roomIsStale(config configRoom: String) -> Bool {
        room.map { $0.configRoom != configRoom } ?? false
    }

    /// `{"muted": false, "room": "kitchen", "configRoom": "hall"}`; the two room keys only when a room was set.
    public var json: JSONValue {
        var fields: [String: JSONValue] = ["muted": .bool(muted)]
        if let room {
            fields["room"] = .string(room.name)
            fields["configRoom"] = .string(room.configRoom)
        }
        return .object(fields)
    }

    /// The bytes of settings.json: the JSON and a newline.
    public var fileData: [UInt8] { Array((json.text + "\n").utf8) }

    /// Reads settings.json. `file` is the path, for the error; unknown keys are ignored.
    public static func decode(_ data: [UInt8], file: String) throws(SettingsFileError) -> LocalSettings {
        let value: JSONValue
        do { value = try JSONValue.parse(data) } catch { throw SettingsFileError(file: file, problem: error.description) }
        guard let fields = value.objectValue else {
            throw SettingsFileError(file: file, problem: "it holds \(value.kindName), not an object")
        }
        var settings = LocalSettings()
        switch fields["muted"] {
        case nil: break
        case .bool(let muted)?: settings.muted = muted
        case let other?: throw SettingsFileError(file: file, problem: "\"muted\" should be true or false, not \(other.kindName)")
        }
        switch (fields["room"], fields["configRoom"]) {
        case (nil, nil): break
        case (.string(let name)?, .string(let configRoom)?):
            guard let clean = RoomName.clean(name) else {
                throw SettingsFileError(file: file, problem: "\"room\" is not a room name of at most 40 characters")
            }
            settings.room = Room(name: clean, configRoom: configRoom)
        default:
            throw SettingsFileError(file: file, problem: "\"room\" and \"configRoom\" should both be strings")
        }
        return settings
    }
}
