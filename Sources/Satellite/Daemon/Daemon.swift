// Wires the actors together as services (ServiceRunner) in the order they
// start; they stop in reverse on SIGTERM or SIGINT: the turn under way and every
// watch get their one result (`shutting_down`) before the socket closes. READY=1
// is sent only once the control socket accepts, and the devices are probed after
// that, so a slow sound card cannot delay readiness.
import Glibc
import SatelliteCore

/// The parlour-satellite process.
public final class Daemon: Sendable {
    private let config: SatelliteConfig
    private let paths: SatellitePaths
    private let environment: [String: String]
    private let cues: CueSounds
    private let hook: HookCommand?
    private let wakeWord: WakeWordEngine?

    /// `cues` and `hook` are the config's sounds and state hook, and `wakeWord` the local wake word's
    /// engine (with `wake` `local`), already loaded and checked (main.swift).
    public init(config: SatelliteConfig, paths: SatellitePaths, environment: [String: String],
                cues: CueSounds = CueSounds(), hook: HookCommand? = nil, wakeWord: WakeWordEngine? = nil) {
        self.config = config
        self.paths = paths
        self.environment = environment
        self.cues = cues
        self.hook = hook
        self.wakeWord = wakeWord
    }

    /// Runs until SIGTERM or SIGINT, or until one of its parts fails (said in the journal).
    /// Throws when it cannot start (socket in use).
    public func run(journal: Journal) async throws(SatelliteError) -> ServiceRunner.Ending {
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
            // Loaded before the start (or the daemon would not be running).
            $0.wakeWord = wakeWord.map { WakeWordHealth(model: $0.name, ok: true) }
            $0.arbitration = ArbitrationHealth(enabled: config.arbitration.enabled)
        }
        keeper.update { $0.muted = local.muted }

        // Set before either device opens: the microphone's first period is processed already.
        AudioEngine.shared.process(AudioProcessing(echoCancel: config.audio.echoCancel, noiseSuppression: config.audio.noiseSuppression,
                                                   autoGain: config.audio.autoGain)) { priority, message, fields in
            bus.notice(priority, message, fields)
        }
        // While the echo is cancelled the microphone is kept open, at the period its mode reads all day: the
        // local ear's, or the streamed room's (80 ms, the server's frame; push turns too, a quarter of the
        // wake-ups of 20 ms while idle).
        let keptPeriod = config.wake == .local ? WakeWordService.periodFrames : FrameBatcher().samples
        let capture = AudioCapture(device: config.audio.input, bus: bus, muted: local.muted,
                                   keptPeriod: config.audio.echoCancel ? keptPeriod : nil)
        let playback = Playback(device: config.audio.output, bus: bus, keepOpen: config.audio.echoCancel, muted: local.muted)
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
        // Satellites of one house (one token) decide which of them answers a wake (docs/arbitration.md).
        let house = { @Sendable in tokens.inForce().flatMap { try? tokens.read($0.kind) }.map(HouseKeys.init(token:)) }
        let link = Link(tokens: tokens, http: HTTPClient(bus: bus), bus: bus, keeper: keeper, retryMs: config.server.retryMs)
        // With arbitration off, this satellite neither advertises itself nor looks for siblings.
        let siblings = config.arbitration.enabled
            ? SiblingDirectory(name: config.name, room: room, keys: house(), bus: bus) { siblings in
                board.update { $0.arbitration.siblings = siblings.map { ArbitrationHealth.Sibling(name: $0.name, room: $0.room) } }
            }
            : nil
        let siblingLink = SiblingLink(port: config.arbitration.port, keys: house(), bus: bus)
        let roster: any SiblingRoster = siblings ?? NoSiblings()
        let arbiter = Arbiter(settings: .init(config.arbitration, name: config.name), roster: roster, link: siblingLink, bus: bus,
                              room: { board.current.room })
        let chooser = ServerChooser(pin: pin, discovery: discovery, link: link, bus: bus,
                                    stateDirectory: paths.stateDirectory, retryMs: config.server.retryMs,
                                    followMoves: config.server.followMoves)
        var stream: ListenStream?
        if config.transport == .stream {
            stream = ListenStream(
                settings: .init(name: config.name, room: room, mode: config.wake == .server ? .wake : .push,
                                retryMs: config.server.retryMs, endpointing: endpointing, bargeIn: config.audio.echoCancel,
                                followUp: config.conversation, arbitrationWindowMs: config.arbitration.windowMs),
                link: link, capture: capture, playback: playback, bus: bus, keeper: keeper, cues: cuePlayer, offline: offline,
                arbiter: arbiter, muted: local.muted)
        }
        let conversation = Conversation(
            settings: .init(name: config.name, room: room, endpointing: endpointing, followUp: config.conversation),
            capture: capture, playback: playback, link: link, bus: bus, keeper: keeper, stream: stream,
            cues: cuePlayer, offline: offline, muted: local.muted)
        let settings = SettingsKeeper(initial: local, stateDirectory: paths.stateDirectory, configRoom: config.room,
                                      conversation: conversation, stream: stream, capture: capture, playback: playback,
                                      keeper: keeper, bus: bus, siblings: siblings)
        let volume = SpeakerVolume(output: config.audio.output, mixer: config.audio.mixer, mixerCard: config.audio.mixerCard)
        let callbacks = CallbackSender(bus: bus)
        let doctor = Doctor(parts: .init(capture: capture, playback: playback, discovery: discovery, pin: pin, link: link,
                                         tokens: tokens, keeper: keeper, board: board, wakeWord: wakeWord,
                                         siblings: config.arbitration.enabled
                                             ? .init(port: config.arbitration.port, link: siblingLink, arbiter: arbiter, roster: roster) : nil),
                            paths: paths)
        let router = CommandRouter(conversation: conversation, chooser: chooser, admin: ServerAdmin(link: link), settings: settings,
                                   volume: volume, board: board, bus: bus, callbacks: callbacks, doctor: doctor, capture: capture,
                                   keeper: keeper, tokenChanged: {
                                       siblingLink.rekey(house())
                                       siblings?.rekey(house())
                                   })

        // The satellite's own ear: a wake starts a turn as parlourctl listen does.
        let wakeWordService = wakeWord.map { engine in
            WakeWordService(engine: engine, capture: capture, bus: bus, keeper: keeper, refractoryMs: config.wakeWord.refractoryMs,
                            bargeIn: config.audio.echoCancel, arbiter: arbiter) {
                _ = await router.listen(hold: false, holder: nil)
            }
        }

        let server = try ControlServer(path: paths.socket, handler: router)

        // In the order they start; they stop in reverse. The bus's readers start first and stop
        // last, so every record up to "stopped" is written.
        var services: [Service] = [
            Service("journal", stop: .ask {
                bus.notice(.notice, "parlour-satellite stopped.")
                bus.finish()
            }) {
                async let written: Void = journal.run(journalEvents, room: room)
                async let told: Void = notifier.run(notifierEvents, room: room)
                _ = await (written, told)
            },
            // Stopped last (the speaker, then the microphone), once nothing can be using either any more.
            Service("microphone") { await capture.run() },
            Service("speaker") { await playback.run() },
        ]
        // Bound before Bonjour starts, which advertises its port; stopped after every wake path.
        if config.arbitration.enabled {
            services.append(Service("siblings") { started in
                siblingLink.open()
                started()
                await siblingLink.run()
            })
        }
        services += [
            Service("discovery") { await discovery.run() },
            Service("link") { started in
                // Before the stream asks it for the server, and before READY=1, so the first state
                // already says whether there is a server, and a configured name is followed to the
                // addresses it stands for (a name that does not resolve yet is tried again by the chooser).
                _ = await pin.placeConfigured()
                await link.follow(await pin.current())
                started()
                await link.run()
            },
            Service("server chooser") { await chooser.run() },
        ]
        if let siblings {
            // The port the siblings' service bound, before this starts (any free one when arbitration.port is 0).
            services.append(Service("sibling directory") {
                if let port = siblingLink.port { await siblings.advertise(port: port) }
                await siblings.run()
            })
        }
        if let stream { services.append(Service("stream") { await stream.run() }) }
        if let stateHook { services.append(Service("state hook") { await stateHook.run() }) }
        services += [
            // The turn under way ends with shutting_down, then its callback goes out, before the socket closes.
            // Each connection's requests, in order; stopped after the turn and the watches have their results.
            // (run() returns once the socket stops accepting, before this is stopped: that is no failure.)
            Service("control connections") {
                await server.run()
                await Service.untilCancelled()
            },
            Service("callbacks", stop: .ask { await callbacks.shutdown() }) { await callbacks.run() },
            Service("watches") { await router.run() },
            // Asked, not cancelled: the turn under way gets `shutting_down` before what it started is stopped.
            Service("conversation", stop: .ask { await conversation.shutdown() }) { await conversation.run() },
            Service("control socket") { [paths, config] started in
                do throws(SatelliteError) {
                    try server.start()
                } catch {
                    bus.notice(.error, error.message)
                }
                keeper.update { $0.started = true }
                notifier.ready(status: keeper.state.sentence(room: room))
                bus.notice(.notice, "parlour-satellite \(SatelliteVersion.satellite) is ready.",
                           ["socket": paths.socket, "transport": config.transport.rawValue])
                if local.muted {
                    bus.notice(.notice, "Muted: the microphone stays closed until parlourctl unmute.", ["muted": "true"])
                }
                started()
                await Service.untilCancelled()
                notifier.stopping()
                server.stop()
            },
            // After READY=1, so a slow sound card cannot delay readiness.
            Service("devices") {
                _ = await capture.probe()
                _ = await playback.probe()
                await Service.untilCancelled()
            },
        ]
        // The start-up's code unmapped once it is over, and once an hour after.
        services.append(Service("resident pages") { await ResidentPages.run(bus: bus) })
        // Last, so it stops first: no wake starts a turn while the rest stops.
        if let wakeWordService { services.append(Service("wake word") { await wakeWordService.run() }) }
        // WATCHDOG=1 while every thread turns (Watchdog).
        if let interval = notifier.watchdogInterval {
            services.append(Service("watchdog") {
                Watchdog.start(interval: interval, journal: journal)
                await Service.untilCancelled()
            })
        }

        let runner = ServiceRunner(services, deadline: Self.stopDeadline, bus: bus) { parts in
            journal.write(JournalRecord(.error, "Stopping took longer than \(Self.stopDeadline); parts still running: "
                + parts.joined(separator: ", ") + ".", fields: ["EVENT": "shutdown"]))
            _exit(1)
        }
        return await runner.run(signals: signals)
    }

    /// How long stopping may take before the daemon says which parts are stuck and exits: under the
    /// unit's TimeoutStopSec=10, after which systemd would kill it without a word.
    static let stopDeadline: Duration = .seconds(8)
}
