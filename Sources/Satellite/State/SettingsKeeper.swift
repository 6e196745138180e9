// Owns <state>/settings.json (the room set with `parlourctl room`, and whether
// the microphone is muted) and puts each change into effect: the conversation,
// the stream, the siblings, the microphone, the speaker (kept open only while unmuted), the state and the bus. Easy to get wrong: the file
// is written first, so a change that cannot be kept is not made at all; changes
// run one at a time, so a quick mute and unmute cannot cross; and a broken file
// reads as muted, never as a microphone left open.
import SatelliteCore

/// The satellite's own settings, kept over restarts.
public actor SettingsKeeper {
    /// settings.json's path.
    public nonisolated let file: String
    private let stateDirectory: String
    private let configRoom: String
    private var settings: LocalSettings
    private let conversation: Conversation
    private let stream: ListenStream?
    private let siblings: SiblingDirectory?
    private let capture: AudioCapture
    private let playback: Playback?
    private let keeper: StateKeeper
    private let bus: EventBus
    /// A change is under way; the next ones wait in line for it.
    private var changing = false
    private var queued: [CheckedContinuation<Void, Never>] = []

    /// settings.json in `stateDirectory`.
    public static func path(stateDirectory: String) -> String {
        SatellitePaths.joined(stateDirectory, "settings.json")
    }

    /// Reads settings.json at start. A file that cannot be read is reported on the bus and read as
    /// muted; a room set before the config's `room` was edited gives way to the config's.
    public static func load(stateDirectory: String, configRoom: String, bus: EventBus) -> LocalSettings {
        let file = path(stateDirectory: stateDirectory)
        AtomicFile.removeLeftovers(of: file)
        guard let data = try? FileSystem.read(file) else {
            guard FileSystem.exists(file) else { return LocalSettings() }
            let problem = SettingsFileError(file: file, problem: "it exists but cannot be opened; check its owner and permissions")
            bus.notice(.warning, problem.description, ["file": file])
            return LocalSettings(muted: true)
        }
        var settings: LocalSettings
        do {
            settings = try LocalSettings.decode(data, file: file)
        } catch {
            bus.notice(.warning, error.description, ["file": file])
            return LocalSettings(muted: true)
        }
        if let room = settings.room, settings.roomIsStale(config: configRoom) {
            settings.room = nil
            bus.notice(.notice, "The config's room is now \(quoted(configRoom)), no longer \(quoted(room.configRoom)) as when "
                + "parlourctl room set \(quoted(room.name)); the config's room is used.", ["file": file])
            try? AtomicFile.write(settings.fileData, to: file, mode: 0o644)
        }
        return settings
    }

    public init(initial: LocalSettings, stateDirectory: String, configRoom: String, conversation: Conversation,
                stream: ListenStream?, capture: AudioCapture, playback: Playback? = nil, keeper: StateKeeper, bus: EventBus,
                siblings: SiblingDirectory? = nil) {
        self.file = SettingsKeeper.path(stateDirectory: stateDirectory)
        self.stateDirectory = stateDirectory
        self.configRoom = configRoom
        self.settings = initial
        self.conversation = conversation
        self.stream = stream
        self.siblings = siblings
        self.capture = capture
        self.playback = playback
        self.keeper = keeper
        self.bus = bus
    }

    // MARK: Room

    /// `{"room", "configRoom", "source": "parlourctl" | "config"}`.
    public func room() -> JSONValue {
        ["room": .string(settings.room(config: configRoom)), "configRoom": .string(configRoom),
         "source": settings.room == nil ? "config" : "parlourctl"]
    }

    /// Sets the room ("" for none) from the next request on, and keeps it over restarts.
    public func setRoom(_ name: String) async -> ControlResult {
        await serially { await self.change(room: name) }
    }

    /// Forgets the room set with `setRoom`: the config's counts again.
    public func resetRoom() async -> ControlResult {
        await serially { await self.change(room: nil) }
    }

    private func change(room name: String?) async -> ControlResult {
        await change({ $0.room = name.map { LocalSettings.Room(name: $0, configRoom: configRoom) } }, what: "The room could not be saved")
    }

    // MARK: Mute

    /// Closes (true) or reopens (false) the microphone, and keeps it so over restarts.
    public func setMuted(_ muted: Bool) async -> ControlResult {
        await serially { await self.change(muted: muted) }
    }

    private func change(muted: Bool) async -> ControlResult {
        let before = settings.muted
        // A mute that cannot be saved still closes the microphone now: the person wants it off.
        let result = await change({ $0.muted = muted }, what: muted ? "Muted for now, but muting could not be saved for after a restart"
                                    : "Unmuting could not be saved, so the microphone stays muted", evenUnsaved: muted)
        guard case .completed = result else { return result }
        return .completed(["muted": .bool(muted), "changed": .bool(before != muted)])
    }

    // MARK: Changing

    /// Runs `body` after every change asked for before it, in the order asked, in the caller's task.
    private func serially(_ body: @escaping @Sendable () async -> ControlResult) async -> ControlResult {
        if changing {
            await withCheckedContinuation { queued.append($0) }
        } else {
            changing = true
        }
        let result = await body()
        // The next change in line goes on; with none, the way is free.
        if queued.isEmpty { changing = false } else { queued.removeFirst().resume() }
        return result
    }

    /// Writes the changed settings, then puts them into effect (`evenUnsaved`: also when they
    /// could not be written). Returns the room's result, or the error of writing.
    private func change(_ edit: (inout LocalSettings) -> Void, what: String, evenUnsaved: Bool = false) async -> ControlResult {
        var changed = settings
        edit(&changed)
        var unsaved: SatelliteError?
        do {
            // Written and fsynced on the blocking thread; the changes are in line (above), so none overtakes another.
            try await BlockingThread.local.run(throwing: { [stateDirectory, file, data = changed.fileData] () throws(AtomicFile.Failure) in
                try AtomicFile.makeFolder(stateDirectory, mode: 0o700)
                try AtomicFile.write(data, to: file, mode: 0o644)
            })
        } catch {
            unsaved = error.satelliteError(what)
            if !evenUnsaved { return .error(unsaved!) }
        }
        let before = settings
        settings = changed
        let room = changed.room(config: configRoom)
        if room != before.room(config: configRoom) {
            await conversation.setRoom(room)
            await stream?.setRoom(room)
            await siblings?.setRoom(room)
            bus.publish(.room(room))
        }
        if changed.muted != before.muted { await apply(muted: changed.muted) }
        if let unsaved { return .error(unsaved) }
        return .completed(self.room())
    }

    /// Muting closes the microphone before it returns; unmuting lets it open again.
    private func apply(muted: Bool) async {
        if muted {
            // The turn under way ends first, so nothing it heard is sent; then the device is released.
            await conversation.setMuted(true)
            await stream?.setMuted(true)
            await capture.setMuted(true)
            await playback?.setMuted(true)
        } else {
            await playback?.setMuted(false)
            await capture.setMuted(false)
            await conversation.setMuted(false)
            await stream?.setMuted(false)
        }
        keeper.update { $0.muted = muted }
        bus.publish(.muted(muted))
    }

    private static func quoted(_ room: String) -> String {
        room.isEmpty ? "none" : room
    }
}
