// The turn over the /listen socket as a pure state machine: events in, actions
// out, no I/O. ListenStream is its shell: it turns what the socket, the
// microphone, the speaker and the timer report into events, and carries the
// actions out in the order given. The stage is idle, listening (a push turn's
// capture, or the server's own listening in wake mode), thinking or speaking.
// Easy to get wrong, and why it lives here with tables of tests: every push
// turn gets exactly one result, whatever ends it (the endpointer, nothing heard,
// a cancel, a newer request, a mute, a timeout, a lost connection, a failed
// microphone or speaker, shutdown); nothing goes up while a reply plays; the
// server says nothing when it heard nothing, so that result is made from what
// is known when it goes idle. Actions name what to do, never how, so the audio
// and the socket can move under it (one audio thread, one network loop)
// without touching it.

/// Where the turn is, as `status` and the state hook see it.
public enum TurnStage: String, Sendable, Equatable, CaseIterable {
    case idle, listening, thinking, speaking
}

/// What ends, or moves, the turn.
public enum TurnEvent: Sendable, Equatable {
    /// A `listen` asks for a push turn; `offline` is its result when the socket is not ready.
    case request(number: Int, hold: Bool, offline: SatelliteError)
    /// The caller cancelled (or went away).
    case cancel(number: Int)
    /// The holder of a `--hold` turn let go.
    case release(number: Int)
    /// The microphone opened for push turn `number` (the awake cue may sound now).
    case microphoneOpened(number: Int)
    /// A captured period went up during a push turn; the endpointer's decision on it.
    case period(samples: Int, decision: Endpointer.Decision)
    /// The microphone failed; `message` says which and why.
    case microphoneFailed(message: String)
    /// The server's `ready`.
    case ready
    /// The server's `state`.
    case serverState(ListenState, text: String?)
    /// The server's `reply`.
    case reply(text: String, via: String)
    /// A spoken answer that can be played arrived.
    case audio
    /// A spoken answer arrived that cannot be played; `bytes` is its size.
    case badAudio(why: String, bytes: Int)
    /// A spoken answer was lost (over the bound): the turn waiting for it cannot be answered.
    case answerLost(why: String)
    /// The reply finished playing (`failure` says why it could not), on the connection it came on or not.
    case played(failure: String?, sameConnection: Bool)
    /// The server's `stop`: it heard its wake word, so whatever plays stops.
    case stop
    /// Push turn `number` ran out of time.
    case timeout(number: Int)
    /// The connection ended; `why` is its last problem.
    case disconnected(why: String)
    case mute
    case unmute
    /// The daemon is stopping.
    case shutdown
}

/// What the shell is to do, in order.
public enum TurnAction: Sendable, Equatable {
    /// Send a control message on the socket.
    case send(ListenCommand)
    /// Send the frames batched so far.
    case flushFrames
    /// Drop the frames batched so far.
    case dropFrames
    /// Open or close the microphone to match `wantsMicrophone`.
    case microphone
    /// Open the microphone for push turn `number`, then say `microphoneOpened`.
    case openMicrophone(number: Int)
    case cue(Cue)
    /// The phase the satellite's state is derived from.
    case phase(TurnPhase?)
    /// Publish what the server heard, or its reply (the bus's `heard` and `reply` events).
    case heard(String)
    case reply(text: String, via: String)
    /// Play the spoken answer that arrived.
    case play
    case stopPlayback
    case startTimer(number: Int)
    case cancelTimer(number: Int)
    /// Push turn `number` ends with `result`.
    case finish(number: Int, ControlResult)
    /// Say an error in the journal.
    case report(String, fields: [String: String])
    /// The endpointer decided the end of speech (a debug record, for scripts/bench).
    case decided
    /// Close the socket so the server drops the question it was hearing.
    case dropServerTurn
}

/// Which way a captured period goes.
public enum PeriodRoute: Sendable, Equatable {
    /// Nowhere, and the batch is dropped: a reply plays, or the socket is not ready.
    case drop
    /// Up as part of the room's stream (wake mode).
    case room
    /// Up as part of the push turn, and to the endpointer (`period`).
    case turn
    /// Nowhere.
    case ignore
}

/// The turn over /listen: the push turn under way, the server's own turn, the reply playing.
public struct TurnMachine: Sendable, Equatable {
    public struct Settings: Sendable, Equatable {
        /// Wake mode: the room goes up all the time the socket is ready.
        public var streamsRoom: Bool
        /// A held turn ends at this many samples even if it is not let go.
        public var maxUtteranceSamples: Int
        /// The push turn's time limit, as said in its timeout result.
        public var timeoutSeconds: Int64

        public init(streamsRoom: Bool, maxUtteranceSamples: Int, timeoutSeconds: Int64) {
            self.streamsRoom = streamsRoom
            self.maxUtteranceSamples = maxUtteranceSamples
            self.timeoutSeconds = timeoutSeconds
        }
    }

    /// A push turn under way.
    public struct Turn: Sendable, Equatable {
        public let number: Int
        public let hold: Bool
        public var stage = TurnStage.listening
        public var samples = 0
        public var sawThinking = false
        public var heard = ""
        public var reply: (text: String, via: String)?

        public static func == (a: Turn, b: Turn) -> Bool {
            a.number == b.number && a.hold == b.hold && a.stage == b.stage && a.samples == b.samples
                && a.sawThinking == b.sawThinking && a.heard == b.heard && a.reply?.text == b.reply?.text && a.reply?.via == b.reply?.via
        }

        /// The result once the reply has played (or there was no audio to play).
        var completed: ControlResult {
            .completed(["heard": .string(heard), "reply": .string(reply?.text ?? ""), "via": .string(reply?.via ?? "")])
        }

        /// The server went idle without a reply: it heard nothing, or it failed and does not say why.
        var silentEnd: ControlResult {
            if heard.isEmpty { return .cancelled(.nothingHeard) }
            return .failure(.serverRefused, "The server heard \u{201C}\(heard)\u{201D} but gave no answer; its own log says why.")
        }
    }

    public let settings: Settings
    public private(set) var turn: Turn?
    /// A reply is playing (the push turn's, or one the server sent on its own).
    public private(set) var playing = false
    /// The server said `ready` on the connection open now.
    public private(set) var ready = false
    public private(set) var muted: Bool
    /// What the server last said it is doing: a turn of its own is under way unless idle.
    public private(set) var server = ListenState.idle
    /// Wake mode: the server is listening on its own turn (not a push turn).
    private var serverListening = false

    public init(settings: Settings, muted: Bool = false) {
        self.settings = settings
        self.muted = muted
    }

    /// Where the turn is: the push turn's stage, else the reply playing, else the server's own turn.
    public var stage: TurnStage {
        if let turn { return turn.stage }
        if playing { return .speaking }
        switch server {
        case .idle: return .idle
        case .listening: return .listening
        case .thinking: return .thinking
        case .speaking: return .speaking
        }
    }

    /// Nothing is under way that a reopened socket would cut off.
    public var quiet: Bool { turn == nil && !playing && server == .idle }

    /// The microphone is open while it is needed: in wake mode once ready, and for a push turn's capture.
    public var wantsMicrophone: Bool {
        if muted || !ready { return false }
        if turn?.stage == .listening { return true }
        return settings.streamsRoom
    }

    public var periodRoute: PeriodRoute {
        if playing || !ready { return .drop }
        guard let turn else { return settings.streamsRoom ? .room : .ignore }
        return turn.stage == .listening ? .turn : .ignore
    }

    /// The push turn `number` is under way and capturing, held.
    public func isHeld(_ number: Int) -> Bool {
        turn.map { $0.number == number && $0.hold && $0.stage == .listening } ?? false
    }

    // MARK: Events

    public mutating func handle(_ event: TurnEvent) -> [TurnAction] {
        switch event {
        case .request(let number, let hold, let offline):
            if muted { return [.finish(number: number, .error(.microphoneMuted))] }
            guard ready else { return [.finish(number: number, .error(offline))] }
            var actions = turn.map { stopTurn($0, .cancelled(.superseded)) } ?? []
            if playing, !actions.contains(.stopPlayback) { actions.append(.stopPlayback) }
            turn = Turn(number: number, hold: hold)
            return actions + [.dropFrames, .send(.start), .phase(.listening), .startTimer(number: number), .openMicrophone(number: number)]

        case .cancel(let number):
            guard let current = turn, current.number == number else { return [] }
            return stopTurn(current, .cancelled(.cancelledByUser))

        case .release(let number):
            guard let current = turn, current.number == number, current.hold, current.stage == .listening else { return [] }
            return endCapture(current)

        case .microphoneOpened(let number):
            guard let current = turn, current.number == number, current.stage == .listening else { return [] }
            return [.cue(.awake)]

        case .period(let samples, let decision):
            guard var current = turn, current.stage == .listening else { return [] }
            current.samples += samples
            turn = current
            if current.hold { return current.samples >= settings.maxUtteranceSamples ? endCapture(current) : [] }
            switch decision {
            case .waiting, .speaking: return []
            case .ended: return endCapture(current)
            case .nothingHeard: return [.dropFrames, .send(.cancel)] + finish(current, .cancelled(.nothingHeard))
            }

        case .microphoneFailed(let message):
            guard let current = turn, current.stage == .listening else { return [] }
            return [.send(.cancel)] + finish(current, .failure(.microphoneUnavailable, message))

        case .ready:
            ready = true
            return [.microphone]

        case .serverState(let state, let text):
            server = state
            return serverSaid(state, text: text)

        case .reply(let text, let via):
            if var current = turn, current.stage == .thinking {
                current.reply = (text, via)
                turn = current
            }
            return [.reply(text: text, via: via)]

        case .audio:
            if var current = turn {
                guard current.stage == .thinking else { return [] }
                current.stage = .speaking
                turn = current
            }
            playing = true
            return [.dropFrames, .phase(.speaking), .play]

        case .badAudio(let why, let bytes):
            if let current = turn, current.stage == .thinking {
                return finish(current, .failure(.badAnswer, why)) + [.send(.spoke)]
            }
            // The server holds its speaking flag until `spoke` (or 250 ms); nothing will play.
            // A push turn still capturing keeps its phase.
            let idle: [TurnAction] = playing || turn != nil ? [] : [.phase(nil)]
            return [.report(why, fields: ["bytes": String(bytes)])] + idle + [.cue(.error), .send(.spoke)]

        case .answerLost(let why):
            guard let current = turn, current.stage == .thinking else { return [] }
            return finish(current, .failure(.badAnswer, "\(why) The answer cannot be played."))

        case .played(let failure, let sameConnection):
            guard playing else { return [] }
            playing = false
            // Streaming resumes with fresh audio, none from while it played.
            var actions: [TurnAction] = [.dropFrames] + (sameConnection ? [.send(.spoke)] : [])
            if let current = turn, current.stage == .speaking {
                actions += finish(current, failure.map { .failure(.speakerUnavailable, $0) } ?? current.completed)
            } else {
                if let failure { actions.append(.report(failure, fields: [:])) }
                if turn == nil { actions.append(.phase(nil)) }
            }
            return actions

        case .stop:
            return playing ? [.stopPlayback] : []

        case .timeout(let number):
            guard let current = turn, current.number == number else { return [] }
            let cancel: [TurnAction] = current.stage == .speaking ? [] : [.send(.cancel)]
            return cancel + finish(current, .failure(.timeout, "The server gave no answer within \(settings.timeoutSeconds) s."))

        case .disconnected(let why):
            ready = false
            server = .idle
            var actions: [TurnAction] = []
            if let current = turn, current.stage != .speaking {
                actions += finish(current, .failure(.serverUnreachable, "The connection to the server ended during the turn. \(why)"))
            }
            if !playing { actions.append(.phase(nil)) }
            return actions + [.microphone]

        case .mute:
            guard !muted else { return [] }
            muted = true
            if let current = turn, current.stage == .listening {
                return [.dropFrames, .send(.cancel)] + finish(current, .error(.mutedWhileListening))
            }
            if turn == nil, server == .listening, ready { return [.dropServerTurn, .microphone] }
            return [.microphone]

        case .unmute:
            guard muted else { return [] }
            muted = false
            return [.microphone]

        case .shutdown:
            var actions = turn.map { stopTurn($0, .cancelled(.shuttingDown)) } ?? []
            if playing, !actions.contains(.stopPlayback) { actions.append(.stopPlayback) }
            ready = false
            return actions + [.microphone]
        }
    }

    // MARK: Steps

    /// The end of the utterance: what is batched goes up, then `end`; the answer is awaited.
    private mutating func endCapture(_ current: Turn) -> [TurnAction] {
        var answering = current
        answering.stage = .thinking
        turn = answering
        return [.flushFrames, .send(.end)] + (current.hold ? [] : [.decided]) + [.phase(.thinking), .cue(.done), .microphone]
    }

    /// Stops the turn where it is (the server drops it, or the reply stops) and gives it `result`.
    private mutating func stopTurn(_ current: Turn, _ result: ControlResult) -> [TurnAction] {
        let stop: TurnAction = current.stage == .speaking ? .stopPlayback : .send(.cancel)
        return [stop] + finish(current, result)
    }

    /// Gives the turn its one result and forgets it.
    private mutating func finish(_ current: Turn, _ result: ControlResult) -> [TurnAction] {
        turn = nil
        return [.cancelTimer(number: current.number), .finish(number: current.number, result), .microphone]
    }

    /// The server's state with no push turn in the way: its own turn (wake mode), shown as the satellite's.
    private mutating func serverSaid(_ state: ListenState, text: String?) -> [TurnAction] {
        if var current = turn {
            // Until `end` went up, the states are not about this turn.
            guard current.stage == .thinking else { return [] }
            switch state {
            case .thinking:
                current.sawThinking = true
                var actions: [TurnAction] = []
                if let text, !text.isEmpty {
                    current.heard = text
                    actions.append(.heard(text))
                }
                turn = current
                return actions
            case .idle where current.sawThinking && current.reply == nil:
                return finish(current, current.silentEnd)
            case .idle, .listening, .speaking:
                return []
            }
        }
        let wasListening = serverListening
        serverListening = state == .listening
        switch state {
        case .listening:
            return (playing ? [] : [.phase(.listening)]) + (wasListening ? [] : [.cue(.awake)])
        case .thinking:
            var actions: [TurnAction] = [.phase(.thinking)]
            if wasListening { actions.append(.cue(.done)) }
            if let text, !text.isEmpty { actions.append(.heard(text)) }
            return actions
        case .speaking:
            // Speaking starts when the WAV plays.
            return []
        case .idle:
            return playing ? [] : [.phase(nil)]
        }
    }
}
