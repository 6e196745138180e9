// The stream transport: one WebSocket to the server's /listen, held open and
// reopened with back-off, as Parlour's own satellites do. In wake mode the room
// goes up continuously and the server decides when someone spoke; in push mode
// only a `parlourctl listen` turn goes up. Easy to get wrong: never stream while
// a reply plays (it would be heard as the next question); never two connections;
// a turn's result must come once even when the server says nothing; the token
// goes in the handshake header only, and no log line carries it. The awake and
// done cues play as listening starts and ends (the server's listening in wake
// mode); what the microphone hears meanwhile still goes up. The room is in the
// socket's URL, so a new room reopens the socket, but only once no turn is under
// way (ours or the server's), so no question is lost to it. Muted, the socket
// stays open and nothing goes up; answers already on their way still play.
// The turn's decisions are TurnMachine's (SatelliteCore, table-tested), its
// events taken one at a time by TurnDriver: this actor carries its actions out
// for the stream transport, on the socket and the devices.
// In wake mode the room goes up from the audio thread (ListenSink), routed by
// the machine's state; only a push turn's periods come here. A follow-up is a
// push turn whose `start` waits for speech to begin: until then its periods are
// kept here (the last half second), and nothing of the room goes up.
// The server's wake (its `stop`) is decided among the satellite's siblings
// (WakeArbiter): the room is kept from the `stop` until then, and goes up first
// once this satellite answers; one that does not drops its turn at the server
// (TurnMachine, `arbitrated`).
import SatelliteCore

/// Holds the /listen socket, streams the microphone, plays the replies.
public actor ListenStream {
    public struct Settings: Sendable {
        public var name: String
        public var room: String
        public var mode: ListenMode
        /// The cap of the reconnect back-off.
        public var retryMs: Int
        /// The satellite's own endpointer, for push turns.
        public var endpointing: Endpointer.Settings
        /// The longest a push turn may take from `start` to its result.
        public var turnTimeout: Duration
        /// `audio.echoCancel`: the room goes on up while a reply plays (TurnMachine.Settings.bargeIn).
        public var bargeIn: Bool
        /// `conversation.*`: listening again after an answer that asks something.
        public var followUp: FollowUp
        /// `arbitration.windowMs`: the longest the siblings take to decide a wake (the room is kept that long).
        public var arbitrationWindowMs: Int

        public init(name: String, room: String, mode: ListenMode, retryMs: Int, endpointing: Endpointer.Settings,
                    turnTimeout: Duration = .seconds(60), bargeIn: Bool = false, followUp: FollowUp = FollowUp(mode: .never),
                    arbitrationWindowMs: Int = 200) {
            self.arbitrationWindowMs = arbitrationWindowMs
            self.followUp = followUp
            self.bargeIn = bargeIn
            self.name = name
            self.room = room
            self.mode = mode
            self.retryMs = retryMs
            self.endpointing = endpointing
            self.turnTimeout = turnTimeout
        }
    }

    /// The largest binary message taken from the server: a long float32 reply fits.
    public static let maxBinary = 8 << 20

    /// The detector's probability claimed for the server's wake, which says none: the same on every
    /// satellite, so that satellites woken by the server are told apart by their level alone.
    public static let serverWakeProbability = 1.0

    private var settings: Settings
    private let link: Link
    private let capture: AudioCapture
    private let playback: Playback
    private let bus: EventBus
    private let keeper: StateKeeper
    private let cues: CuePlayer?
    /// nil when `offline.speak` is false.
    private let offline: OfflineVoice?
    /// Decides with the siblings whether this satellite answers the server's wake.
    private let arbiter: (any WakeArbiter)?

    private var policy: ReconnectPolicy
    /// The connection in use, once it opened; `connectionNumber` tells a new one from the last.
    private var connection: WebSocketClient?
    private var connectionNumber = 0
    /// Why the last connection ended or failed, for a turn asked for while there is none.
    private var lastProblem = SatelliteError(.serverUnreachable, "The satellite has not connected to the server's /listen yet.")
    /// The last disconnect said in the journal, so a server that stays away is not said every attempt.
    private var lastNotice = ""
    /// Set when the connection can no longer be trusted to be in step; it is then closed.
    private var outOfStep: String?
    /// Unknown message types already logged: each is logged once in the daemon's life.
    private var unknownTypes: Set<String> = []
    private var malformed = 0

    private var batcher = FrameBatcher()
    /// A follow-up's periods until its speech starts: the last `FollowUp.preRollSamples` of them.
    private var kept: [Int16] = []
    /// What this part starts (the microphone's reader, a reply playing, timers): children of `run()`.
    private let work = WorkGroup()
    private var microphone: WorkGroup.Handle?
    /// In wake mode, the open microphone's sink, told where periods go as the machine moves.
    private var sink: ListenSink?
    private var microphoneBusy = false
    private var microphoneRetry = Backoff(first: .seconds(1), cap: .seconds(30))
    private var microphoneRetrying = false

    /// The turn's state, its decisions and its events (TurnDriver); everything below is I/O around it.
    private let driver: TurnDriver<ListenStream>
    private var machine: TurnMachine { driver.machine }
    /// The reply playing, and which one, so a late end is not taken for a newer one's.
    private var playing: (number: Int, work: WorkGroup.Handle)?
    private var plays = 0
    /// The push turn's endpointer.
    private var ear: (number: Int, endpointer: Endpointer)?
    /// When the endpointer last decided, for the `decided` record.
    private var decidedAt: UInt64 = 0
    private var timers: [Int: WorkGroup.Handle] = [:]

    /// Set when the socket is to be reopened (a new room) once nothing is under way: why, for the journal.
    private var reopening: String?
    /// Where the connection under way (or the last one) was made to.
    private var place: StreamTarget.Place?
    /// Which of the pinned addresses the socket tries first: the next one after an attempt that never opened.
    private var addressTurn = 0
    /// Set when the socket was closed on purpose to reopen it: why.
    private var closing: String?

    public init(settings: Settings, link: Link, capture: AudioCapture, playback: Playback, bus: EventBus, keeper: StateKeeper,
                cues: CuePlayer? = nil, offline: OfflineVoice? = nil, arbiter: (any WakeArbiter)? = nil, muted: Bool = false) {
        self.settings = settings
        self.arbiter = arbiter
        self.driver = TurnDriver(TurnMachine(settings: .init(
            streamsRoom: settings.mode == .wake, maxUtteranceSamples: settings.endpointing.maxUtteranceMs * 16,
            timeoutSeconds: settings.turnTimeout.components.seconds, speaksOffline: offline != nil, bargeIn: settings.bargeIn,
            followUp: settings.followUp), muted: muted))
        self.offline = offline
        self.link = link
        self.capture = capture
        self.playback = playback
        self.bus = bus
        self.keeper = keeper
        self.cues = cues
        self.policy = ReconnectPolicy(capMs: settings.retryMs)
        // Offline until the server says ready on the socket, so status never says idle before it could listen.
        keeper.update { $0.streamConnected = false }
    }

    // MARK: The connection

    /// Connects, and reconnects with back-off, until cancelled.
    public func run() async {
        async let children: Void = work.run()
        async let turns: Void = driveTurns()
        let servers = bus.subscribe(bufferingNewest: 4)
        work.start { [weak self] in
            for await event in servers {
                guard case .server = event else { continue }
                await self?.serverChanged()
            }
        }
        await connect()
        await disconnected()
        await driver.apply(.shutdown)
        if let current = playing { await current.work.wait() }
        driver.finish()
        await turns
        await children
    }

    private func driveTurns() async {
        await driver.run(self)
    }

    private func connect() async {
        while !Task.isCancelled {
            guard let target = await link.streamTarget() else {
                lastProblem = SatelliteError(.noServer, "No server is set. Set server.url in the config, or pair with parlourctl pair LINK.")
                await pause(policy.delay(after: .refused))
                continue
            }
            let url: String
            let room = settings.room
            do {
                url = try ListenURL.build(server: target.place.url, client: settings.name, room: room, mode: settings.mode)
            } catch {
                lastProblem = SatelliteError(.noServer, "The server URL cannot be used for /listen: \(error.description).")
                bus.notice(.error, lastProblem.message)
                await pause(policy.delay(after: .refused))
                continue
            }
            var headers: [String: String] = [:]
            if let token = target.token { headers["Authorization"] = "Bearer \(token)" }
            let client = WebSocketClient.connect(url: url, headers: headers, maxMessage: Self.maxBinary,
                                                 maxText: ListenMessage.maxTextBytes, key: target.place.key,
                                                 addresses: Self.turned(target.place.addresses, by: addressTurn))
            place = target.place
            let ending = await session(client, url: url, room: room)
            // The next attempt tries the pinned server's next address (an HTTP request tries them all by itself).
            if ending == .refused { addressTurn &+= 1 }
            if Task.isCancelled { break }
            if let why = closing {
                // Closed on purpose: back at once, and the back-off is left as it was.
                closing = nil
                bus.notice(.notice, "Reconnecting to the server's /listen: \(why).")
                continue
            }
            // Said here too: a reopening kept the state as it was, and its attempt may have failed.
            keeper.update { $0.streamConnected = false }
            let delay = policy.delay(after: ending)
            let when = delay == .zero ? "at once" : "in \(Self.seconds(delay))"
            // The same failure attempt after attempt is said once, then at debug.
            let priority: Priority = lastProblem.message == lastNotice ? .debug : lastProblem.code == .tokenRefused ? .error : .warning
            lastNotice = lastProblem.message
            bus.notice(priority, "Disconnected from the server's /listen: \(lastProblem.message) Reconnecting \(when).",
                       ["reason": lastProblem.code.rawValue, "retryMs": String(Self.milliseconds(delay))])
            await pause(delay)
        }
    }

    /// `addresses` begun at the `turn`th (counted round).
    static func turned(_ addresses: [String], by turn: Int) -> [String] {
        guard !addresses.isEmpty else { return [] }
        let first = turn % addresses.count
        return Array(addresses[first...] + addresses[..<first])
    }

    /// One connection, from connecting to its last event; says how it ended. `room` is the one in `url`.
    private func session(_ client: WebSocketClient, url: String, room: String) async -> ReconnectPolicy.Ending {
        var openedAt: ContinuousClock.Instant?
        defer { client.close() }
        for await event in client.events {
            switch event {
            case .open:
                openedAt = .now
                connectionNumber += 1
                connection = client
                outOfStep = nil
                malformed = 0
                if let place { await link.streamOpened(url: place.url) }
                lastNotice = ""
                bus.notice(.notice, "Connected to the server's /listen.", ["url": url, "mode": settings.mode.rawValue])
                // The room or the server changed while this connection was being made: it is reopened again.
                if room == settings.room { reopening = nil } else { reopenIfQuiet() }
                await serverChanged()
            case .text(let text):
                await received(text)
            case .binary(let data):
                await received(data)
            case .pong:
                break
            case .oversized(let kind, let bytes):
                let bound = kind == .text ? "4 KiB" : "8 MiB"
                let why = "The server sent a \(kind.rawValue) message of \(bytes) bytes, over the \(bound) bound; it was dropped."
                bus.notice(.error, why, ["bytes": String(bytes)])
                if kind == .binary { await driver.apply(.answerLost(why: why)) }
                outOfStep = why
                client.close()
            case .closed(let code, let reason):
                await disconnected()
                guard let openedAt else { return .refused }
                if let why = outOfStep {
                    lastProblem = SatelliteError(.serverUnreachable, "\(why) The connection was closed to get back in step.")
                    return .broken
                }
                let shown = reason.isEmpty ? "" : ": \(reason)"
                switch code {
                case let code? where code == 1002 || code == 1007:
                    lastProblem = SatelliteError(.serverUnreachable, "The connection was closed for a protocol error (\(code)\(shown)).")
                    return .broken
                case 1006?:
                    lastProblem = SatelliteError(.serverUnreachable, "The connection dropped without a close frame (1006)\(shown).")
                    return .broken
                case let code?:
                    lastProblem = SatelliteError(.serverUnreachable, "The server closed the connection (\(code)\(shown)).")
                    return code == 1000 || code == 1001 ? .clean(lived: .now - openedAt) : .broken
                case nil:
                    lastProblem = SatelliteError(.serverUnreachable, "The connection closed\(shown).")
                    return .broken
                }
            case .dead(let reason):
                await disconnected()
                lastProblem = SatelliteError(.serverUnreachable, "The server stopped answering pings (\(reason)); the connection was dropped.")
                return .broken
            case .refused(let refusal):
                // A redirect (never followed) or another wss key (nothing sent): said as it is, asked again after the back-off.
                await disconnected()
                lastProblem = refusal
                return .refused
            case .failed(let reason):
                await disconnected()
                // A refused handshake is the only sign of a bad token: ask /v1/models.
                let health = await link.streamRefused()
                if health.tokenAccepted == false {
                    lastProblem = SatelliteError(.tokenRefused, "The server refused the token. Pair again with parlourctl pair, or set it with parlourctl token set.")
                } else if health.reachable == false {
                    lastProblem = SatelliteError(.serverUnreachable, "The server cannot be reached (\(reason)).")
                } else {
                    lastProblem = SatelliteError(.serverUnreachable, "The server refused the /listen handshake (\(reason)), though it takes the token on /v1/models.")
                }
                return .refused
            }
        }
        // The events end only after their last event, or when this task is cancelled (shutdown).
        await disconnected()
        return .broken
    }

    /// The connection is gone: a push turn under way gets its result, and the microphone closes.
    private func disconnected() async {
        guard connection != nil || machine.ready else { return }
        connection = nil
        await link.streamClosed()
        // Reopened on purpose, it is back at once: no `offline` flickers past.
        if closing == nil { keeper.update { $0.streamConnected = false } }
        await driver.apply(.disconnected(why: lastProblem.message))
    }

    private func pause(_ delay: Duration) async {
        guard delay > .zero else { return }
        try? await Task.sleep(for: delay)
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    private static func seconds(_ duration: Duration) -> String {
        let ms = milliseconds(duration)
        return ms % 1000 == 0 ? "\(ms / 1000) s" : String(printf: "%.1f s", Double(ms) / 1000)
    }

    // MARK: From the server

    private func received(_ text: String) async {
        let message: ListenMessage
        do {
            message = try ListenMessage.decode(text)
        } catch {
            malformed += 1
            if malformed <= 3 {
                bus.notice(.warning, "The server sent a message this satellite cannot read; it was ignored: \(error.description).",
                           malformed == 3 ? ["more": "further ones on this connection are not logged"] : [:])
            }
            return
        }
        switch message {
        case .ready(_, _, let mode):
            policy.ready()
            if mode != settings.mode {
                bus.notice(.warning, "The server took the /listen socket as \(mode.rawValue) mode, not \(settings.mode.rawValue).")
            }
            // Queued first: a request that comes once status says idle is applied after it, and finds the machine ready.
            driver.send(.ready)
            keeper.update { $0.streamConnected = true }
        case .state(let state, let text):
            await driver.apply(.serverState(state, text: text))
        case .reply(let text, let via):
            await driver.apply(.reply(text: text, via: via))
        case .stop:
            // The server heard its wake word: whatever plays stops now, and the room is kept until the siblings decide.
            await serverWoke(atNs: MonotonicClock.nanoseconds())
        case .unknown(let type):
            if unknownTypes.insert(type).inserted {
                bus.notice(.info, "The server sent a message of type \"\(type)\", unknown here; such messages are ignored.", ["type": type])
            }
        }
    }

    /// The server's wake at `wakeNs`: the room is kept from now on, and the siblings are asked who answers.
    private func serverWoke(atNs wakeNs: UInt64) async {
        let heard = sink.map { ($0, $0.hold()) }
        await driver.apply(.stop)
        guard machine.deciding else {
            // No turn of the server's to decide (a push turn is under way): the room goes on up.
            heard?.0.decided(won: true)
            return
        }
        let number = connectionNumber
        work.start { [weak self, arbiter] in
            let decision = await arbiter?.arbitrate(levelDb: heard?.1 ?? SignalLevel.floorDBFS,
                                                    probability: Self.serverWakeProbability, wakeNs: wakeNs)
            await self?.arbitrated(won: decision?.won ?? true, sink: heard?.0, connection: number)
        }
    }

    /// The siblings decided the wake heard on connection `number`: the room kept goes up first, or never.
    private func arbitrated(won: Bool, sink: ListenSink?, connection number: Int) async {
        sink?.decided(won: won)
        guard number == connectionNumber else { return }
        await driver.apply(.arbitrated(won: won))
    }

    private func received(_ wav: [UInt8]) async {
        do {
            let audio = try WAV.decode(wav)
            await driver.apply(.audio, audio: audio)
        } catch {
            let why = "The server's spoken answer is not a WAV this satellite can play: \(error)."
            await driver.apply(.badAudio(why: why, bytes: wav.count))
        }
    }

    // MARK: The machine's actions

    /// The machine has moved: the room stops now if it is to stop, and starts only after the actions.
    func moved() {
        routePeriods(mayOpen: false)
    }

    /// The actions are out: the room may start, and a reopening that waited for quiet may go.
    func settled() {
        routePeriods(mayOpen: true)
        reopenIfQuiet()
    }

    /// Carries out one of the machine's actions (TurnDriver, one at a time); `audio` is the answer a `play` plays.
    func perform(_ action: TurnAction, audio: PCMAudio?) async {
        switch action {
        case .beginCapture: connection?.sendText(ListenCommand.start.text)
        case .endCapture:
            if let rest = batcher.flush() { connection?.sendBinary(rest) }
            connection?.sendText(ListenCommand.end.text)
        case .abandon: connection?.sendText(ListenCommand.cancel.text)
        case .spoke: connection?.sendText(ListenCommand.spoke.text)
        case .dropFrames:
            batcher.reset()
            kept = []
        case .microphone: await setMicrophone()
        case .openMicrophone(let number):
            // The microphone is open first, so what is said over the awake sound goes up too.
            await setMicrophone()
            driver.send(.microphoneOpened(number: number))
        case .cue(let cue): await cues?.play(cue)
        case .phase(let phase): keeper.update { $0.phase = phase }
        case .heard(let text): bus.publish(.heard(text))
        case .reply(let text, let via): bus.publish(.reply(text: text, via: via))
        case .play: if let audio { play(audio) }
        case .prepareNotice:
            let notice = await offline?.notice()
            driver.send(.notice(ready: notice != nil), audio: notice)
        case .errorCue: await cues?.play(.error, untilEnd: true)
        case .stopPlayback: await playback.cancel()
        case .startTimer(let number):
            let limit = settings.turnTimeout
            timers[number] = work.start { [weak self] in
                guard (try? await Task.sleep(for: limit)) != nil else { return }
                await self?.event(.timeout(number: number))
            }
        case .cancelTimer(let number): timers.removeValue(forKey: number)?.cancel()
        case .finish(let number, _):
            if ear?.number == number { ear = nil }
        case .report(let why, let fields): bus.notice(.error, why, fields)
        case .decided: bus.notice(.debug, "End of speech decided.", ["monotonic_ns": String(decidedAt)])
        case .followUp(let number):
            ear = (number, Endpointer(settings: settings.followUp.endpointing(settings.endpointing)))
            bus.publish(.followUp)
        case .speechBegan:
            connection?.sendText(ListenCommand.start.text)
            if let block = batcher.add(kept) { connection?.sendBinary(block) }
            kept = []
        case .dropServerTurn:
            closing = machine.standingDown
                ? "another satellite of the house answers the wake word, so the server drops what it heard here"
                : "the microphone was muted while the server was listening, so it drops what it heard"
            connection?.close()
        }
    }

    /// Tells the sink where the microphone's periods go: the room straight to the socket, a push turn's here.
    private func routePeriods(mayOpen: Bool) {
        guard let sink else { return }
        let route = machine.periodRoute
        sink.route(room: route == .room ? connection : nil, turn: route == .turn, mayOpen: mayOpen)
    }

    private func event(_ event: TurnEvent) async {
        await driver.apply(event)
    }

    // MARK: Playing

    /// Plays a reply on a task of its own, so `stop` is read while it plays; `spoke` follows its end.
    private func play(_ audio: PCMAudio) {
        if let current = playing { current.work.cancel() }
        plays += 1
        let number = plays
        let sentOn = connectionNumber
        let task = work.start { [playback] in
            var failure: ALSAError?
            do throws(ALSAError) {
                _ = try await playback.play(audio)
            } catch {
                failure = error
            }
            await self.played(number, connection: sentOn, failure: failure)
        }
        playing = (number, task)
    }

    private func played(_ number: Int, connection sentOn: Int, failure: ALSAError?) async {
        guard playing?.number == number else { return }
        playing = nil
        let fault = failure.map { SpeakerFault(device: $0.device, reason: $0.reason) }
        await driver.apply(.played(failure: fault, sameConnection: sentOn == connectionNumber))
    }

    /// Stops a wake-mode reply playing; false when none was.
    public func stopPlaying() async -> Bool {
        guard playing != nil else { return false }
        await playback.cancel()
        return true
    }

    // MARK: Push turns

    /// Runs push turn `number` over the socket: `start`, the frames, `end` when the endpointer
    /// (or, with `hold`, `release`) ends it, then the answer. A newer turn supersedes it.
    public func pushTurn(number: Int, hold: Bool) async -> ControlResult {
        ear = (number, Endpointer(settings: settings.endpointing))
        driver.send(.request(number: number, hold: hold, offline: lastProblem))
        return await driver.result(of: number)
    }

    /// The holder of push turn `number` let go: what was heard so far is sent.
    public func release(_ number: Int) async {
        await event(.release(number: number))
    }

    /// Cancels push turn `number` if it is still under way: `cancel` goes up (or its reply stops).
    public func cancel(_ number: Int) async {
        await event(.cancel(number: number))
    }

    /// Ends the follow-up under way, if one is; false when none is.
    public func cancelFollowUp() async -> Bool {
        guard let turn = machine.turn, turn.followUp else { return false }
        await event(.cancel(number: turn.number))
        return true
    }

    /// Ends the push turn under way with `shutting_down`, and refuses new ones.
    public func shutdown() async {
        await event(.shutdown)
    }

    // MARK: Room and mute

    /// Requests from now on name `room`. The socket's URL carries it, so the socket is reopened,
    /// at once when nothing is under way, else as soon as the turn under way has ended.
    public func setRoom(_ room: String) {
        guard room != settings.room else { return }
        settings.room = room
        reopening = room.isEmpty ? "the satellite has no room now" : "requests now name the room \(room)"
        reopenIfQuiet()
    }

    /// Muted: the microphone closes and nothing goes up; a push turn still capturing ends with
    /// `muted`, and an answer already on its way still plays. The socket stays open. In wake mode,
    /// a question the server was still hearing is dropped by reopening the socket, so the server
    /// never answers half of it after `unmute`.
    public func setMuted(_ muted: Bool) async {
        await event(muted ? .mute : .unmute)
    }

    /// The pin in use changed (another server, a move, a new key or token place): the socket is
    /// reopened to the new place once nothing is under way; a turn under way ends where it began.
    private func serverChanged() async {
        guard let place, await link.streamTarget()?.place != place else { return }
        reopening = "the server in use changed"
        reopenIfQuiet()
    }

    private func reopenIfQuiet() {
        guard let why = reopening, machine.quiet, let connection else { return }
        reopening = nil
        closing = why
        connection.close()
    }

    // MARK: The microphone

    /// Opens or closes the microphone to match what the machine wants; one call at a time does the work.
    private func setMicrophone() async {
        guard !microphoneBusy else { return }
        microphoneBusy = true
        defer { microphoneBusy = false }
        while machine.wantsMicrophone != (microphone != nil) {
            if let open = microphone {
                microphone = nil
                sink = nil
                open.cancel()
                await capture.close()
                batcher.reset()
                continue
            }
            do {
                // Streaming the room all day, the capture reads whole 80 ms messages: a quarter of
                // the wake-ups of 20 ms periods, and no later on the wire, since a message waits for
                // its last sample either way. A push turn keeps 20 ms, so the endpointer decides sooner.
                let period = settings.mode == .wake ? batcher.samples : 320
                let frames: AsyncStream<CaptureChunk>
                if settings.mode == .wake {
                    // The room from the audio thread; a push turn's periods still come to `feed`.
                    let sink = ListenSink(bound: max(4, 32000 / period), windowMs: settings.arbitrationWindowMs)
                    self.sink = sink
                    routePeriods(mayOpen: true)
                    _ = try await capture.open(periodFrames: period, into: sink)
                    frames = sink.periods
                } else {
                    frames = try await capture.open(periodFrames: period)
                }
                microphoneRetry.reset()
                microphone = work.start { [weak self] in
                    for await chunk in frames {
                        guard let self else { return }
                        await self.feed(chunk)
                    }
                }
            } catch {
                microphoneFailed(error)
                return
            }
        }
    }

    private func microphoneFailed(_ error: ALSAError) {
        microphone = nil
        sink = nil
        // Sent, not applied: this is also an action's (opening the microphone), which cannot wait for the next event.
        driver.send(.microphoneFailed(message: "The microphone \(error.device) failed while listening: \(error.reason)."))
        // AudioCapture reports the microphone's health; in wake mode try again with back-off.
        guard settings.mode == .wake, !microphoneRetrying else { return }
        microphoneRetrying = true
        let delay = microphoneRetry.next()
        work.start { [weak self] in
            guard (try? await Task.sleep(for: delay)) != nil else { return }
            await self?.retryMicrophone()
        }
    }

    private func retryMicrophone() async {
        microphoneRetrying = false
        await setMicrophone()
    }

    /// One period from the microphone.
    private func feed(_ chunk: CaptureChunk) async {
        let samples: [Int16]
        switch chunk {
        case .samples(let value): samples = value
        case .failed(let error):
            microphoneFailed(error)
            return
        }
        switch machine.periodRoute {
        case .drop:
            // Nothing goes up while a reply plays: it would be heard as the next question.
            batcher.reset()
        case .ignore, .room:
            // The room goes up from the audio thread (ListenSink); a period routed before the machine moved is let go.
            break
        case .turn:
            guard var current = ear else { return }
            let decision = current.endpointer.feed(samples)
            // When the endpointer decided, for scripts/bench; said once `end` is queued, so saying it costs the turn nothing.
            decidedAt = MonotonicClock.nanoseconds()
            ear = current
            if machine.turn?.begun == false {
                kept.append(contentsOf: samples)
                if kept.count > FollowUp.preRollSamples { kept.removeFirst(kept.count - FollowUp.preRollSamples) }
            } else if let block = batcher.add(samples) {
                connection?.sendBinary(block)
            }
            await driver.apply(.period(samples: samples.count, decision: decision))
        }
    }

}

extension ListenStream: TurnEffects {}
