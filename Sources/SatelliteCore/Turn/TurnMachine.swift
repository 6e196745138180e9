// The turn as a pure state machine: events in, actions out, no I/O. Two shells
// carry it: ListenStream (the stream transport: the /listen socket) and
// Conversation (the record transport: a WAV to /voice). Each turns what the
// socket or the request, the microphone, the speaker and the timer report into
// events, and carries the actions out in the order given, one event's to their
// end before the next event is applied (TurnDriver). The stage is idle,
// listening (a push turn's capture, or the server's own listening in wake
// mode), thinking or speaking (the answer, or the satellite's own notice when
// the house cannot be reached).
// After an answer that asks something (FollowUp), the machine opens a turn of
// its own, a follow-up: the microphone listens without the wake word, and
// nothing goes up until speech starts (`speechBegan`), so a room that stays
// quiet sends nothing. It is a turn like any push turn from there, with no
// caller waiting for its result.
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
    /// A `listen` asks for a push turn (a turn under way is superseded); `offline` is its result when the socket is not ready.
    case request(number: Int, hold: Bool, offline: SatelliteError)
    /// `parlourctl cancel`.
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
    /// What was playing (the answer, or the notice) ended; `failure` says why it could not play;
    /// `sameConnection`: the connection it came on is still the one open (stream).
    case played(failure: SpeakerFault?, sameConnection: Bool)
    /// The server's `stop`: it heard its wake word, so whatever plays stops. In wake mode the
    /// satellite's siblings then decide who answers (`arbitrated`): until then its turn is not shown.
    case stop
    /// The siblings' decision on the server's last wake: `won`, this satellite answers (as a lone
    /// one does); lost, another does, and this one's turn at the server is dropped unheard.
    case arbitrated(won: Bool)
    /// Push turn `number` ran out of time.
    case timeout(number: Int)
    /// The connection ended; `why` is its last problem.
    case disconnected(why: String)
    case mute
    case unmute
    /// The record transport's answer from /voice; `audio` when a spoken answer follows (`audio` or `badAudio`).
    case answered(heard: String, reply: String, via: String, audio: Bool)
    /// The record transport's request failed.
    case requestFailed(SatelliteError)
    /// The satellite's own notice is ready to play, or could not be made.
    case notice(ready: Bool)
    /// The daemon is stopping: the turn ends, and requests from now on are refused.
    case shutdown
}

/// Why the speaker could not play.
public struct SpeakerFault: Sendable, Equatable {
    public let device: String
    public let reason: String

    public init(device: String, reason: String) {
        self.device = device
        self.reason = reason
    }
}

/// What the shell is to do, in order.
public enum TurnAction: Sendable, Equatable {
    /// Begin the utterance (stream: `start`; record: an empty recording).
    case beginCapture
    /// The utterance is over: send it to be answered (stream: the last frames, then `end`; record: the WAV to /voice).
    case endCapture
    /// Drop the utterance, or the question in flight (stream: `cancel`; record: the request is abandoned).
    case abandon
    /// The answer has been played (stream: `spoke`, so the server lets go of its speaking flag).
    case spoke
    /// Drop the frames captured but not yet sent.
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
    /// Play the spoken answer that arrived, or the notice once ready.
    case play
    /// Make the satellite's own notice ready (it says the house cannot be reached), then say `notice`.
    case prepareNotice
    /// Sound the error cue to its end (an error result that was not spoken follows it).
    case errorCue
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
    /// Follow-up `number` begins: the ear waits for speech to start (FollowUp.endpointing), keeping what
    /// it hears; `watch` shows it.
    case followUp(number: Int)
    /// The follow-up's speech started (stream: `start`, then what was kept from just before its onset).
    case speechBegan
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

/// The turn: the push turn under way, the server's own turn (wake mode), the reply playing.
/// In wake mode the server's wake word opens a turn on every satellite that streamed it; the
/// siblings decide which one answers, and until then the turn is neither shown nor cued. The one
/// that answers shows it and sounds the awake cue then (the room kept since the wake goes up first,
/// WakeHold); the others drop their turn at the server by reopening the socket (its session goes,
/// and with it the question it was hearing, never sent to be answered), showing and saying nothing.
public struct TurnMachine: Sendable, Equatable {
    public struct Settings: Sendable, Equatable {
        /// Wake mode: the room goes up all the time the socket is ready.
        public var streamsRoom: Bool
        /// A held turn ends at this many samples even if it is not let go.
        public var maxUtteranceSamples: Int
        /// The push turn's time limit, as said in its timeout result; nil for none (record: HTTP has its own).
        public var timeoutSeconds: Int64?
        /// `offline.speak`: an unreachable house is said by the satellite itself.
        public var speaksOffline: Bool
        /// `audio.echoCancel`: the microphone's audio has the reply cancelled out of it, so the room
        /// goes on up while a reply plays (the server's `bargeIn` decides; its `stop` ends the reply).
        public var bargeIn: Bool
        /// `conversation.*`: when an answer is followed by listening again without the wake word.
        public var followUp: FollowUp

        public init(streamsRoom: Bool, maxUtteranceSamples: Int, timeoutSeconds: Int64?, speaksOffline: Bool = false,
                    bargeIn: Bool = false, followUp: FollowUp = FollowUp(mode: .never)) {
            self.followUp = followUp
            self.streamsRoom = streamsRoom
            self.maxUtteranceSamples = maxUtteranceSamples
            self.timeoutSeconds = timeoutSeconds
            self.speaksOffline = speaksOffline
            self.bargeIn = bargeIn
        }
    }

    /// A push turn under way.
    public struct Turn: Sendable, Equatable {
        public let number: Int
        public let hold: Bool
        public var stage = TurnStage.listening
        public var samples = 0
        /// The holder let go before a period came: the next one ends it.
        public var released = false
        public var sawThinking = false
        public var heard = ""
        public var reply: (text: String, via: String)?
        /// The result waiting while the satellite says its notice.
        public var notice: ControlResult?
        /// The notice is playing (not a reply from before it, still stopping).
        public var saying = false
        /// The machine opened it after an answer (a follow-up): no caller waits for its result.
        public var followUp = false
        /// The utterance goes up (stream: `start` was sent); a follow-up's only once speech has started.
        public var begun = true

        public static func == (a: Turn, b: Turn) -> Bool {
            a.number == b.number && a.hold == b.hold && a.stage == b.stage && a.samples == b.samples && a.sawThinking == b.sawThinking
                && a.heard == b.heard && a.reply?.text == b.reply?.text && a.reply?.via == b.reply?.via && a.notice == b.notice && a.released == b.released
                && a.saying == b.saying && a.followUp == b.followUp && a.begun == b.begun
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
    /// After `shutdown`: requests are refused.
    public private(set) var stopping = false
    /// What the server last said it is doing: a turn of its own is under way unless idle.
    public private(set) var server = ListenState.idle
    /// Wake mode: the server is listening on its own turn (not a push turn).
    private var serverListening = false
    /// Wake mode: the server woke and the siblings have not decided yet; its turn is not shown.
    public private(set) var deciding = false
    /// Wake mode: another satellite answers the server's wake; what the server says of this
    /// connection's turn is not shown, played or cued, until the socket is reopened.
    public private(set) var standingDown = false
    /// The answer's words while it plays: once it has played to its end, they decide a follow-up.
    private var answer: String?
    /// Follow-ups since a person last asked (a request, or the server's wake word).
    private var followUpsInARow = 0
    /// The last follow-up's number: they count down from -1, apart from the requests' numbers.
    private var lastFollowUp = 0

    /// `ready` from the start for the record transport, which has no socket to wait for.
    public init(settings: Settings, muted: Bool = false, ready: Bool = false) {
        self.settings = settings
        self.muted = muted
        self.ready = ready
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
        if (playing && !settings.bargeIn) || !ready { return .drop }
        guard let turn else { return settings.streamsRoom ? .room : .ignore }
        return turn.stage == .listening ? .turn : .ignore
    }

    // MARK: Events

    public mutating func handle(_ event: TurnEvent) -> [TurnAction] {
        let actions = step(event)
        // An answer stopped before its end asks nothing.
        if actions.contains(.stopPlayback) { answer = nil }
        return actions
    }

    private mutating func step(_ event: TurnEvent) -> [TurnAction] {
        switch event {
        case .request(let number, let hold, let offline):
            if stopping { return [.finish(number: number, .cancelled(.shuttingDown))] }
            if muted { return [.finish(number: number, .error(.microphoneMuted))] }
            var actions = turn.map { stopTurn($0, .cancelled(.superseded)) } ?? []
            if playing, !actions.contains(.stopPlayback) { actions.append(.stopPlayback) }
            followUpsInARow = 0
            turn = Turn(number: number, hold: hold)
            guard ready else { return actions + finish(Turn(number: number, hold: hold), .error(offline)) }
            let timer: [TurnAction] = settings.timeoutSeconds == nil ? [] : [.startTimer(number: number)]
            return actions + [.dropFrames, .beginCapture, .phase(.listening)] + timer + [.openMicrophone(number: number)]

        case .cancel(let number):
            guard let current = turn, current.number == number else { return [] }
            return stopTurn(current, .cancelled(.cancelledByUser))

        case .release(let number):
            guard var current = turn, current.number == number, current.hold, current.stage == .listening else { return [] }
            guard current.samples > 0 else {
                current.released = true
                turn = current
                return []
            }
            return endCapture(current)

        case .microphoneOpened(let number):
            guard let current = turn, current.number == number, current.stage == .listening else { return [] }
            return [.cue(.awake)]

        case .period(let samples, let decision):
            guard var current = turn, current.stage == .listening else { return [] }
            current.samples += samples
            var began: [TurnAction] = []
            if !current.begun, decision == .speaking || decision.isFinal && decision != .nothingHeard {
                current.begun = true
                began = [.speechBegan]
            }
            turn = current
            if current.hold { return current.released || current.samples >= settings.maxUtteranceSamples ? endCapture(current) : [] }
            switch decision {
            case .waiting, .speaking: return began
            case .ended: return began + endCapture(current)
            case .nothingHeard: return [.dropFrames] + abandon(current) + finish(current, .cancelled(.nothingHeard))
            }

        case .microphoneFailed(let message):
            guard let current = turn, current.stage == .listening else { return [] }
            return abandon(current) + finish(current, .failure(.microphoneUnavailable, message))

        case .ready:
            ready = true
            return [.microphone]

        case .serverState(let state, let text):
            server = state
            if deciding || standingDown {
                serverListening = state == .listening
                return []
            }
            return serverSaid(state, text: text)

        case .reply(let text, let via):
            if standingDown { return [] }
            if var current = turn, current.stage == .thinking {
                current.reply = (text, via)
                turn = current
                answer = text
            } else if turn == nil {
                answer = text
            }
            return [.reply(text: text, via: via)]

        case .audio:
            // Another satellite's answer, had the server got this far: never played here.
            if standingDown { return [] }
            if var current = turn {
                guard current.stage == .thinking else { return [] }
                current.stage = .speaking
                turn = current
            }
            playing = true
            return [.dropFrames, .phase(.speaking), .play]

        case .badAudio(let why, let bytes):
            // The server holds its speaking flag until `spoke` (or 250 ms); nothing will play.
            if let current = turn, current.stage == .thinking {
                return [.spoke] + finish(current, .failure(.badAnswer, why))
            }
            // A push turn still capturing keeps its phase.
            let idle: [TurnAction] = playing || turn != nil ? [] : [.phase(nil)]
            return [.report(why, fields: ["bytes": String(bytes)])] + idle + [.cue(.error), .spoke]

        case .answerLost(let why):
            guard let current = turn, current.stage == .thinking else { return [] }
            return finish(current, .failure(.badAnswer, "\(why) The answer cannot be played."))

        case .played(let failure, let sameConnection):
            guard playing else { return [] }
            playing = false
            let answered = answer
            answer = nil
            if let current = turn, let pending = current.notice {
                // A reply from before the notice, stopped, ends with nothing to say.
                guard current.saying else { return [.dropFrames] }
                return [.dropFrames] + deliver(current, Self.saidBySatellite(pending, failure))
            }
            // Streaming resumes with fresh audio, none from while it played.
            var actions: [TurnAction] = [.dropFrames] + (sameConnection ? [.spoke] : [])
            let why = failure.map { "The answer could not be played on \($0.device): \($0.reason)." }
            if let current = turn, current.stage == .speaking {
                actions += finish(current, why.map { .failure(.speakerUnavailable, $0) } ?? current.completed)
            } else {
                if let why { actions.append(.report(why, fields: [:])) }
                // The server may have woken over the reply (barge-in): its turn is shown now.
                if turn == nil { actions.append(.phase(serverListening ? .listening : nil)) }
            }
            guard failure == nil, let answered, turn == nil, !serverListening, ready, !muted, !stopping,
                  settings.followUp.follows(answered, inARow: followUpsInARow) else { return actions }
            // Listening again at once: the state goes from speaking to listening, never idle between, and
            // the microphone opens once it says listening (so the local wake word has let go of it).
            return actions.filter { $0 != .phase(nil) && $0 != .microphone } + followUp()

        case .stop:
            if settings.streamsRoom, turn == nil, !standingDown { deciding = true }
            return playing ? [.stopPlayback] : []

        case .arbitrated(let won):
            guard deciding else { return [] }
            deciding = false
            guard won else {
                standingDown = true
                // The socket reopens: the server's session, and the question it was hearing, go with it.
                return ready ? [.dropServerTurn] : []
            }
            // What the server said meanwhile is shown now, as a lone satellite would have shown it.
            // (Its listening is new to the satellite: the awake cue sounds now, and no done cue before it.)
            guard server != .idle else { return [] }
            serverListening = false
            return serverSaid(server, text: nil)

        case .timeout(let number):
            guard let current = turn, current.number == number, current.notice == nil, let seconds = settings.timeoutSeconds else { return [] }
            // A follow-up whose microphone gave no sound to decide on: nobody spoke.
            if !current.begun { return deliver(current, .cancelled(.nothingHeard)) }
            let cancel: [TurnAction] = current.stage == .speaking ? [] : abandon(current)
            return cancel + finish(current, .failure(.timeout, "The server gave no answer within \(seconds) s."))

        case .disconnected(let why):
            ready = false
            server = .idle
            deciding = false
            standingDown = false
            var actions: [TurnAction] = []
            if let current = turn, current.followUp, !current.begun {
                // A follow-up no one has spoken into yet ends as quietly as if no one had.
                actions += deliver(current, .cancelled(.nothingHeard))
            } else if let current = turn, current.stage != .speaking {
                actions += finish(current, .failure(.serverUnreachable, "The connection to the server ended during the turn. \(why)"))
            }
            if !playing, turn == nil { actions.append(.phase(nil)) }
            return actions + [.microphone]

        case .mute:
            guard !muted else { return [] }
            muted = true
            // Muted, no turn of the server's is shown, whoever answers it.
            deciding = false
            if let current = turn, current.stage == .listening {
                return [.dropFrames] + abandon(current) + deliver(current, .error(.mutedWhileListening))
            }
            if turn == nil, server == .listening, ready { return [.dropServerTurn, .microphone] }
            return [.microphone]

        case .unmute:
            guard muted else { return [] }
            muted = false
            return [.microphone]

        case .answered(let heard, let reply, let via, let audio):
            guard var current = turn, current.stage == .thinking else { return [] }
            var actions: [TurnAction] = heard.isEmpty ? [] : [.heard(heard)]
            if heard.isEmpty && reply.isEmpty { return actions + finish(current, .cancelled(.nothingHeard)) }
            actions.append(.reply(text: reply, via: via))
            current.heard = heard
            current.reply = (reply, via)
            turn = current
            if audio { answer = reply }
            return audio ? actions : actions + finish(current, current.completed)

        case .requestFailed(let error):
            guard let current = turn, current.stage == .thinking else { return [] }
            return finish(current, .error(error))

        case .notice(let isReady):
            guard var current = turn, let pending = current.notice, !current.saying else { return [] }
            guard isReady else { return [.errorCue] + deliver(current, pending) }
            current.saying = true
            turn = current
            playing = true
            return [.play]

        case .shutdown:
            stopping = true
            var actions = turn.map { stopTurn($0, .cancelled(.shuttingDown)) } ?? []
            if playing, !actions.contains(.stopPlayback) { actions.append(.stopPlayback) }
            return actions + [.microphone]
        }
    }

    // MARK: Steps

    /// Listens again without the wake word: a turn of the machine's own, which sends nothing until speech starts.
    private mutating func followUp() -> [TurnAction] {
        followUpsInARow += 1
        lastFollowUp -= 1
        turn = Turn(number: lastFollowUp, hold: false, followUp: true, begun: false)
        // Timed from here, as a request is: a microphone that gives no sound cannot hold it open.
        let timer: [TurnAction] = settings.timeoutSeconds == nil ? [] : [.startTimer(number: lastFollowUp)]
        return [.dropFrames, .followUp(number: lastFollowUp), .phase(.listening)] + timer + [.openMicrophone(number: lastFollowUp)]
    }

    /// Drops the utterance under way; a follow-up whose speech never started has sent nothing to drop.
    private func abandon(_ current: Turn) -> [TurnAction] {
        current.begun ? [.abandon] : []
    }

    /// The turn's result for its caller; a follow-up has none.
    private func result(_ current: Turn, _ result: ControlResult) -> [TurnAction] {
        current.followUp ? [] : [.finish(number: current.number, result)]
    }

    /// The end of the utterance: what is batched goes up, then `end`; the answer is awaited.
    private mutating func endCapture(_ current: Turn) -> [TurnAction] {
        var answering = current
        answering.stage = .thinking
        turn = answering
        return [.endCapture] + (current.hold ? [] : [.decided]) + [.phase(.thinking), .cue(.done), .microphone]
    }

    /// Stops the turn where it is (the question is dropped, or the speaker stops) and gives it `result`.
    private mutating func stopTurn(_ current: Turn, _ result: ControlResult) -> [TurnAction] {
        let stop: [TurnAction] = current.stage == .speaking ? [.stopPlayback] : abandon(current)
        return stop + deliver(current, result)
    }

    /// Ends the turn with `result`: an unreachable house is said aloud first (`offline.speak`),
    /// another error is marked with the error cue.
    private mutating func finish(_ current: Turn, _ result: ControlResult) -> [TurnAction] {
        guard case .error(let error) = result else { return deliver(current, result) }
        if error.code == .serverUnreachable, settings.speaksOffline {
            var saying = current
            saying.stage = .speaking
            saying.notice = result
            turn = saying
            return [.cancelTimer(number: current.number), .microphone, .phase(.speaking), .prepareNotice]
        }
        turn = nil
        return [.cancelTimer(number: current.number), .microphone, .errorCue, .phase(nil)] + self.result(current, result)
    }

    /// Gives the turn its one result and forgets it; the state says idle and the microphone is put right
    /// before the caller hears.
    private mutating func deliver(_ current: Turn, _ result: ControlResult) -> [TurnAction] {
        turn = nil
        return [.cancelTimer(number: current.number), .phase(nil), .microphone] + self.result(current, result)
    }

    /// The error result, marked as said by the satellite when the notice reached the speaker.
    public static func saidBySatellite(_ result: ControlResult, _ failure: SpeakerFault?) -> ControlResult {
        guard case .error(let error) = result else { return result }
        guard let failure else {
            return .error(SatelliteError(error.code, error.message + " The satellite said so itself.", via: "satellite"))
        }
        return .error(SatelliteError(error.code, error.message
            + " The satellite could not say so either: the speaker \(failure.device) failed: \(failure.reason)."))
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
        // The server heard its wake word: a person asks anew.
        if serverListening { followUpsInARow = 0 }
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
