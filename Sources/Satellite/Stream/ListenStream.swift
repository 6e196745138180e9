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
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
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

        public init(name: String, room: String, mode: ListenMode, retryMs: Int, endpointing: Endpointer.Settings,
                    turnTimeout: Duration = .seconds(60)) {
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

    private var settings: Settings
    private let link: Link
    private let capture: AudioCapture
    private let playback: Playback
    private let bus: EventBus
    private let keeper: StateKeeper
    private let cues: CuePlayer?

    private var policy: ReconnectPolicy
    /// The connection in use, once it opened; `connectionNumber` tells a new one from the last.
    private var connection: WebSocketClient?
    private var connectionNumber = 0
    private var isReady = false
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
    private var microphone: Task<Void, Never>?
    private var microphoneBusy = false
    private var microphoneRetry = Backoff(first: .seconds(1), cap: .seconds(30))
    private var microphoneRetryTask: Task<Void, Never>?

    /// The reply playing, and which one, so a late end is not taken for a newer one's.
    private var playing: (number: Int, task: Task<Void, Never>)?
    private var plays = 0

    private var turn: PushTurn?
    private var turns = 0
    /// Wake mode: whether the server said it is listening (its turn, not a push turn).
    private var serverListening = false

    /// The microphone stays closed and nothing goes up.
    private var muted: Bool
    /// What the server last said it is doing (wake mode): a turn of its own is under way unless idle.
    private var serverState = ListenState.idle
    /// Set when the socket is to be reopened (a new room) once nothing is under way: why, for the journal.
    private var reopening: String?
    /// Set when the socket was closed on purpose to reopen it: why.
    private var closing: String?

    public init(settings: Settings, link: Link, capture: AudioCapture, playback: Playback, bus: EventBus, keeper: StateKeeper,
                cues: CuePlayer? = nil, muted: Bool = false) {
        self.settings = settings
        self.muted = muted
        self.link = link
        self.capture = capture
        self.playback = playback
        self.bus = bus
        self.keeper = keeper
        self.cues = cues
        self.policy = ReconnectPolicy(capMs: settings.retryMs)
        // Offline until the socket opens, so status never says idle before it could listen.
        keeper.update { $0.streamConnected = false }
    }

    // MARK: The connection

    /// Connects, and reconnects with back-off, until cancelled.
    public func run() async {
        while !Task.isCancelled {
            guard let server = await link.serverURL() else {
                lastProblem = SatelliteError(.noServer, "No server is set. Set server.url in the config, or pair with parlourctl pair LINK.")
                await pause(policy.delay(after: .refused))
                continue
            }
            let url: String
            let room = settings.room
            do {
                url = try ListenURL.build(server: server, client: settings.name, room: room, mode: settings.mode)
            } catch {
                lastProblem = SatelliteError(.noServer, "The server URL cannot be used for /listen: \(error.description).")
                bus.notice(.error, lastProblem.message)
                await pause(policy.delay(after: .refused))
                continue
            }
            var headers: [String: String] = [:]
            if let token = await link.streamToken(for: server) { headers["Authorization"] = "Bearer \(token)" }
            let client = WebSocketClient.connect(url: url, headers: headers, maxMessage: Self.maxBinary,
                                                 maxText: ListenMessage.maxTextBytes)
            let ending = await session(client, url: url, room: room)
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
        await disconnected()
        if let current = playing { current.task.cancel(); await current.task.value }
        await setMicrophone()
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
                keeper.update { $0.streamConnected = true }
                await link.streamOpened()
                lastNotice = ""
                bus.notice(.notice, "Connected to the server's /listen.", ["url": url, "mode": settings.mode.rawValue])
                // The room changed while this connection was being made: it is reopened again.
                if room == settings.room { reopening = nil } else { reopenIfQuiet() }
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
                if let current = turn, current.phase == .answering, kind == .binary {
                    finishTurn(current.number, .failure(.badAnswer, "\(why) The answer cannot be played."))
                }
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
        guard connection != nil || isReady else { return }
        connection = nil
        isReady = false
        serverState = .idle
        // Reopened on purpose, it is back at once: no `offline` flickers past.
        if closing == nil { keeper.update { $0.streamConnected = false } }
        if let current = turn, current.phase != .playing {
            finishTurn(current.number, .failure(.serverUnreachable, "The connection to the server ended during the turn. \(lastProblem.message)"))
        }
        if playing == nil { keeper.update { $0.phase = nil } }
        await setMicrophone()
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
            isReady = true
            policy.ready()
            if mode != settings.mode {
                bus.notice(.warning, "The server took the /listen socket as \(mode.rawValue) mode, not \(settings.mode.rawValue).")
            }
            await setMicrophone()
        case .state(let state, let text):
            await self.serverState(state, text: text)
        case .reply(let text, let via):
            bus.publish(.reply(text: text, via: via))
            if var current = turn, current.phase == .answering {
                current.reply = (text, via)
                turn = current
            }
        case .stop:
            // The server heard its wake word: whatever plays stops now.
            if playing != nil { await playback.cancel() }
        case .unknown(let type):
            if unknownTypes.insert(type).inserted {
                bus.notice(.info, "The server sent a message of type \"\(type)\", unknown here; such messages are ignored.", ["type": type])
            }
        }
    }

    private func serverState(_ state: ListenState, text: String?) async {
        serverState = state
        defer { reopenIfQuiet() }
        if var current = turn {
            // Until `end` went up, the states are not about this turn.
            guard current.phase == .answering else { return }
            switch state {
            case .thinking:
                current.sawThinking = true
                if let text, !text.isEmpty {
                    current.heard = text
                    bus.publish(.heard(text))
                }
                turn = current
            case .idle where current.sawThinking && current.reply == nil:
                finishTurn(current.number, current.silentEnd)
            case .idle, .listening, .speaking:
                break
            }
            return
        }
        // Wake mode: the server's turn, shown as the satellite's own state.
        let wasListening = serverListening
        serverListening = state == .listening
        switch state {
        case .listening:
            if playing == nil { keeper.update { $0.phase = .listening } }
            if !wasListening { await cues?.play(.awake) }
        case .thinking:
            keeper.update { $0.phase = .thinking }
            if wasListening { await cues?.play(.done) }
            if let text, !text.isEmpty { bus.publish(.heard(text)) }
        case .speaking: break  // speaking starts when the WAV plays
        case .idle: if playing == nil { keeper.update { $0.phase = nil } }
        }
    }

    private func received(_ wav: Data) async {
        let audio: PCMAudio
        do {
            audio = try WAV.decode(wav)
        } catch {
            let why = "The server's spoken answer is not a WAV this satellite can play: \(error)."
            if let current = turn, current.phase == .answering {
                finishTurn(current.number, .failure(.badAnswer, why))
            } else {
                bus.notice(.error, why, ["bytes": String(wav.count)])
                if playing == nil { keeper.update { $0.phase = nil } }
                await cues?.play(.error)
            }
            // The server holds its speaking flag until `spoke` (or 250 ms); nothing will play.
            connection?.sendText(ListenCommand.spoke.text)
            return
        }
        if var current = turn {
            guard current.phase == .answering else { return }
            current.phase = .playing
            turn = current
        }
        play(audio)
    }

    // MARK: Playing

    /// Plays a reply on a task of its own, so `stop` is read while it plays; `spoke` follows its end.
    private func play(_ audio: PCMAudio) {
        if let current = playing { current.task.cancel() }
        plays += 1
        let number = plays
        let turnNumber = turn?.number
        batcher.reset()
        keeper.update { $0.phase = .speaking }
        let sentOn = connectionNumber
        let task = Task { [playback] in
            var failure: ALSAError?
            do throws(ALSAError) {
                _ = try await playback.play(audio)
            } catch {
                failure = error
            }
            self.played(number, turn: turnNumber, connection: sentOn, failure: failure)
        }
        playing = (number, task)
    }

    private func played(_ number: Int, turn turnNumber: Int?, connection sentOn: Int, failure: ALSAError?) {
        guard playing?.number == number else { return }
        playing = nil
        // Streaming resumes with fresh audio, none from while it played.
        batcher.reset()
        if sentOn == connectionNumber { connection?.sendText(ListenCommand.spoke.text) }
        if let turnNumber, let current = turn, current.number == turnNumber {
            if let failure {
                finishTurn(turnNumber, .failure(.speakerUnavailable, "The answer could not be played on \(failure.device): \(failure.reason)."))
            } else {
                finishTurn(turnNumber, current.completed)
            }
        } else {
            if let failure { bus.notice(.error, "The answer could not be played on \(failure.device): \(failure.reason).") }
            keeper.update { $0.phase = nil }
        }
        reopenIfQuiet()
    }

    /// Stops a wake-mode reply playing; false when none was.
    public func stopPlaying() async -> Bool {
        guard playing != nil else { return false }
        await playback.cancel()
        return true
    }

    // MARK: Push turns

    /// Runs one push turn over the socket: `start`, the frames, `end` when the endpointer
    /// (or, with `hold`, the holder) ends it, then the answer. Cancelling the calling task
    /// sends `cancel` and ends it with `cancelled_by_user`.
    public func pushTurn(hold: Bool, released: @escaping @Sendable () async -> Bool) async -> ControlResult {
        if muted { return .error(.microphoneMuted) }
        guard let connection, isReady else { return .error(lastProblem) }
        if playing != nil { await playback.cancel() }
        turns += 1
        let number = turns
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<ControlResult, Never>) in
                var fresh = PushTurn(number: number, hold: hold, released: released, continuation: continuation,
                                     endpointer: Endpointer(settings: settings.endpointing))
                let limit = settings.turnTimeout
                fresh.timeout = Task { [weak self] in
                    guard (try? await Task.sleep(for: limit)) != nil else { return }
                    await self?.timedOut(number)
                }
                turn = fresh
                batcher.reset()
                connection.sendText(ListenCommand.start.text)
                keeper.update { $0.phase = .listening }
                Task { await self.startListening(number) }
            }
        } onCancel: {
            Task { await self.cancelTurn(number) }
        }
    }

    /// Opens the microphone for a push turn, then plays the awake sound: the microphone is open
    /// first, so what is said over the sound goes up too.
    private func startListening(_ number: Int) async {
        await setMicrophone()
        guard let current = turn, current.number == number, current.phase == .capturing else { return }
        await cues?.play(.awake)
    }

    private func cancelTurn(_ number: Int) async {
        guard let current = turn, current.number == number else { return }
        switch current.phase {
        case .capturing, .answering: connection?.sendText(ListenCommand.cancel.text)
        case .playing: await playback.cancel()
        }
        finishTurn(number, .cancelled(.cancelledByUser))
    }

    private func timedOut(_ number: Int) {
        guard let current = turn, current.number == number else { return }
        if current.phase != .playing { connection?.sendText(ListenCommand.cancel.text) }
        let seconds = settings.turnTimeout.components.seconds
        finishTurn(number, .failure(.timeout, "The server gave no answer within \(seconds) s."))
    }

    /// Gives the turn its one result and forgets it.
    private func finishTurn(_ number: Int, _ result: ControlResult) {
        guard let current = turn, current.number == number else { return }
        turn = nil
        current.timeout?.cancel()
        current.continuation.resume(returning: result)
        Task { await self.setMicrophone() }
        reopenIfQuiet()
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
        guard muted != self.muted else { return }
        self.muted = muted
        if muted {
            if let current = turn, current.phase == .capturing {
                batcher.reset()
                connection?.sendText(ListenCommand.cancel.text)
                finishTurn(current.number, .error(.mutedWhileListening))
            } else if turn == nil, serverState == .listening, let connection {
                closing = "the microphone was muted while the server was listening, so it drops what it heard"
                connection.close()
            }
        }
        await setMicrophone()
    }

    /// Whether nothing is under way that a reopened socket would cut off.
    private var quiet: Bool { turn == nil && playing == nil && serverState == .idle }

    private func reopenIfQuiet() {
        guard let why = reopening, quiet, let connection else { return }
        reopening = nil
        closing = why
        connection.close()
    }

    // MARK: The microphone

    /// Open while it is needed: always once ready in wake mode, and for a push turn's capture.
    private var wantsMicrophone: Bool {
        if muted { return false }
        if turn?.phase == .capturing { return connection != nil }
        return settings.mode == .wake && isReady
    }

    /// Opens or closes the microphone to match `wantsMicrophone`; one call at a time does the work.
    private func setMicrophone() async {
        guard !microphoneBusy else { return }
        microphoneBusy = true
        defer { microphoneBusy = false }
        while wantsMicrophone != (microphone != nil) {
            if let open = microphone {
                microphone = nil
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
                let frames = try await capture.open(periodFrames: period)
                microphoneRetry.reset()
                microphone = Task { [weak self] in
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
        if let current = turn, current.phase == .capturing {
            connection?.sendText(ListenCommand.cancel.text)
            finishTurn(current.number, .failure(.microphoneUnavailable, "The microphone \(error.device) failed while listening: \(error.reason)."))
        }
        // AudioCapture reports the microphone's health; in wake mode try again with back-off.
        guard settings.mode == .wake, microphoneRetryTask == nil else { return }
        let delay = microphoneRetry.next()
        microphoneRetryTask = Task { [weak self] in
            try? await Task.sleep(for: delay)
            await self?.retryMicrophone()
        }
    }

    private func retryMicrophone() async {
        microphoneRetryTask = nil
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
        // Nothing goes up while a reply plays: it would be heard as the next question.
        guard playing == nil, let connection, isReady else {
            batcher.reset()
            return
        }
        guard var current = turn else {
            if settings.mode == .wake, let block = batcher.add(samples) { connection.sendBinary(block) }
            return
        }
        guard current.phase == .capturing else { return }
        current.samples += samples.count
        let decision = current.endpointer.feed(samples)
        // When the endpointer decided, for scripts/bench; said once `end` is queued, so saying it costs the turn nothing.
        let decidedAt = MonotonicClock.nanoseconds()
        turn = current
        if let block = batcher.add(samples) { connection.sendBinary(block) }
        let number = current.number
        let ended: Bool
        if current.hold {
            let released = await current.released()
            guard let again = turn, again.number == number, again.phase == .capturing else { return }
            ended = released || again.samples >= settings.endpointing.maxUtteranceMs * 16
        } else {
            switch decision {
            case .waiting, .speaking: ended = false
            case .ended: ended = true
            case .nothingHeard:
                batcher.reset()
                connection.sendText(ListenCommand.cancel.text)
                finishTurn(number, .cancelled(.nothingHeard))
                return
            }
        }
        guard ended else { return }
        if let rest = batcher.flush() { connection.sendBinary(rest) }
        connection.sendText(ListenCommand.end.text)
        if !current.hold { bus.notice(.debug, "End of speech decided.", ["monotonic_ns": String(decidedAt)]) }
        guard var answering = turn, answering.number == number else { return }
        answering.phase = .answering
        turn = answering
        keeper.update { $0.phase = .thinking }
        await cues?.play(.done)
        await setMicrophone()
    }

    public func ping() -> Bool { true }
}
