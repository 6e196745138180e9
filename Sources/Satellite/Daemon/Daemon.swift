// Wires the actors together, starts them in order, and stops them in reverse on
// SIGTERM or SIGINT: the turn under way and every watch get their one result
// (`shutting_down`) before the socket closes. READY=1 is sent only once the
// control socket accepts, and the devices are probed after that, so a slow
// sound card cannot delay readiness.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import SatelliteCore

/// The parlour-satellite process.
public final class Daemon: Sendable {
    private let config: SatelliteConfig
    private let paths: SatellitePaths
    private let environment: [String: String]
    private let cues: CueSounds
    private let hook: HookCommand?

    /// `cues` and `hook` are the config's sounds and state hook, already loaded and checked (main.swift).
    public init(config: SatelliteConfig, paths: SatellitePaths, environment: [String: String],
                cues: CueSounds = CueSounds(), hook: HookCommand? = nil) {
        self.config = config
        self.paths = paths
        self.environment = environment
        self.cues = cues
        self.hook = hook
    }

    /// Runs until SIGTERM or SIGINT. Throws when it cannot start (socket in use).
    public func run(journal: Journal) async throws(SatelliteError) {
        let signals = Signals.watch([SIGTERM, SIGINT])
        let board = StatusBoard(StatusModel(
            name: config.name, room: config.room, transport: config.transport.rawValue, wake: config.wake.rawValue,
            version: SatelliteVersion.satellite, microphone: config.audio.input, speaker: config.audio.output))
        let bus = EventBus(taps: [board.tap])
        let journalEvents = bus.subscribe(bufferingNewest: 1024)
        let notifierEvents = bus.subscribe()
        let notifier = Notifier()
        let keeper = StateKeeper(bus: bus)

        // The room set with parlourctl, and muting, outlive a restart (settings.json).
        let local = SettingsKeeper.load(stateDirectory: paths.stateDirectory, configRoom: config.room, bus: bus)
        let room = local.room(config: config.room)
        board.update {
            $0.room = room
            $0.muted = local.muted
        }
        keeper.update { $0.muted = local.muted }

        let capture = AudioCapture(device: config.audio.input, bus: bus, muted: local.muted)
        let playback = Playback(device: config.audio.output, bus: bus)
        let cuePlayer = CuePlayer(playback: playback, sounds: cues)
        // The awake sound reaches a real microphone too (and the speaker's buffer delays it): it is recorded, but not taken for speech.
        let ignoreOnsetMs = cues[.awake].map { $0.frameCount * 1000 / max($0.sampleRate, 1) + 250 } ?? 0
        let endpointing = Endpointer.Settings(silenceMs: config.audio.silenceMs, maxUtteranceMs: config.audio.maxUtteranceMs,
                                              leadingSilenceMs: config.audio.leadingSilenceMs, ignoreOnsetMs: ignoreOnsetMs)
        let offline = config.offline.speak
            ? OfflineVoice(settings: .init(voice: config.offline.voice, text: config.offline.text, configFile: paths.config), bus: bus)
            : nil
        // Subscribed before the first state change, so the hook hears starting → … too.
        let stateHook = hook.map {
            StateHook(settings: .init(command: $0, timeout: .milliseconds(config.hooks.timeoutMs), environment: environment,
                                      socket: paths.socket, room: room), bus: bus)
        }
        let serverURL = config.server.url.isEmpty ? nil : config.server.url
        // A kill in the middle of a write leaves a temporary beside the file (the token, perhaps).
        for file in ["token", "pin.json", "doctor"] {
            AtomicFile.removeLeftovers(of: SatellitePaths.joined(paths.stateDirectory, file))
        }
        let tokens = TokenStore(stateDirectory: paths.stateDirectory, environment: environment)
        // server.url's token is the one in force at start (INTERFACE.md), until `token set` gives it another.
        let pin = ServerPin(stateDirectory: paths.stateDirectory, configuredURL: serverURL,
                            configuredToken: tokens.inForce()?.kind ?? .state, bus: bus)
        let discovery = Discovery(bus: bus)
        let link = Link(tokens: tokens, http: HTTPClient(bus: bus), bus: bus, keeper: keeper, retryMs: config.server.retryMs)
        let chooser = ServerChooser(pin: pin, discovery: discovery, link: link, bus: bus,
                                    stateDirectory: paths.stateDirectory, retryMs: config.server.retryMs)
        var stream: ListenStream?
        if config.transport == .stream {
            stream = ListenStream(
                settings: .init(name: config.name, room: room, mode: config.wake == .push ? .push : .wake,
                                retryMs: config.server.retryMs, endpointing: endpointing),
                link: link, capture: capture, playback: playback, bus: bus, keeper: keeper, cues: cuePlayer, muted: local.muted)
        }
        let conversation = Conversation(
            settings: .init(name: config.name, room: room, endpointing: endpointing),
            capture: capture, playback: playback, link: link, bus: bus, keeper: keeper, stream: stream,
            cues: cuePlayer, offline: offline, muted: local.muted)
        let settings = SettingsKeeper(initial: local, stateDirectory: paths.stateDirectory, configRoom: config.room,
                                      conversation: conversation, stream: stream, capture: capture, keeper: keeper, bus: bus)
        let volume = SpeakerVolume(output: config.audio.output, mixer: config.audio.mixer, mixerCard: config.audio.mixerCard)
        let callbacks = CallbackSender(bus: bus)
        let doctor = Doctor(parts: .init(capture: capture, playback: playback, discovery: discovery, pin: pin, link: link,
                                         tokens: tokens, keeper: keeper, board: board), paths: paths)
        let router = CommandRouter(conversation: conversation, chooser: chooser, admin: ServerAdmin(link: link), settings: settings,
                                   volume: volume, board: board, bus: bus, callbacks: callbacks, doctor: doctor, capture: capture,
                                   keeper: keeper)

        let server = try ControlServer(path: paths.socket, handler: router)
        let journalTask = Task { await journal.run(journalEvents, room: room) }
        let notifierTask = Task { await notifier.run(notifierEvents, room: room) }

        // Before READY=1, so the first state already says whether there is a server.
        await link.follow(await pin.current())
        try server.start()
        keeper.update { $0.started = true }
        notifier.ready(status: keeper.state.sentence(room: room))
        bus.notice(.notice, "parlour-satellite \(SatelliteVersion.satellite) is ready.",
                   ["socket": paths.socket, "transport": config.transport.rawValue])
        if local.muted {
            bus.notice(.notice, "Muted: the microphone stays closed until parlourctl unmute.", ["muted": "true"])
        }

        var services: [Task<Void, Never>] = [
            Task { await discovery.run() }, Task { await link.run() }, Task { await chooser.run() }, Task { await server.run() },
        ]
        if let stream { services.append(Task { await stream.run() }) }
        if let stateHook { services.append(Task { await stateHook.run() }) }
        services.append(Task {
            _ = await capture.probe()
            _ = await playback.probe()
            // After READY=1: espeak-ng says the notice into memory on its own thread.
            offline?.prepare()
        })
        if let interval = notifier.watchdogInterval {
            let pings: [@Sendable () async -> Bool] = [
                { await conversation.ping() }, { await link.ping() }, { await discovery.ping() }, { await chooser.ping() }, { await capture.ping() }, { await playback.ping() },
            ]
            services.append(Task { await notifier.watchdog(every: interval, pings: pings) })
        }

        for await signal in signals {
            bus.notice(.notice, "Shutting down on \(signal == SIGTERM ? "SIGTERM" : "SIGINT").")
            break
        }
        notifier.stopping()
        server.stop()
        await conversation.shutdown()
        await router.endWatches()
        // The turn under way has just ended with shutting_down: its callback goes out now.
        await callbacks.shutdown()
        for service in services.reversed() { service.cancel() }
        for service in services.reversed() { await service.value }
        await capture.close()
        bus.notice(.notice, "parlour-satellite stopped.")
        bus.finish()
        await journalTask.value
        await notifierTask.value
    }
}
