// One turn at a time: listen to the room until the person stops, send what was
// said to the server, play the answer. The turn's decisions are TurnMachine's
// (a second `listen` supersedes the first, whose caller is told so; `cancel`
// stops it; shutdown ends it; each with exactly one result for its caller).
// With the stream transport ListenStream carries the turn; with the record
// transport this actor does: the microphone, the WAV to /voice, the answer,
// each action in turn as TurnDriver takes the machine's events.
// The microphone is closed before the answer plays, so the reply is never
// recorded as the next question. The cues sound where their moments happen:
// awake once the microphone is open (so nothing said over it is lost), done
// when the utterance ends, error on an error result. When the house cannot be
// reached, the satellite says so itself (OfflineVoice) and the result says
// `via: "satellite"`. Muted, it refuses to listen; a mute in the middle of a
// capture drops what was heard (nothing is sent), while a turn past its capture
// (thinking, speaking) finishes and its answer plays.
import SatelliteCore

/// Runs `listen` and `ask` requests.
public actor Conversation {
    public struct Settings: Sendable {
        public var name: String
        public var room: String
        public var endpointing: Endpointer.Settings
        /// `conversation.*`: listening again after an answer that asks something (record transport).
        public var followUp: FollowUp

        public init(name: String, room: String, endpointing: Endpointer.Settings, followUp: FollowUp = FollowUp(mode: .never)) {
            self.followUp = followUp
            self.name = name
            self.room = room
            self.endpointing = endpointing
        }
    }

    private var settings: Settings
    private let capture: AudioCapture
    private let playback: Playback
    private let link: Link
    private let bus: EventBus
    private let keeper: StateKeeper
    /// With the stream transport, turns go over the /listen socket instead of /voice.
    private let stream: ListenStream?
    private let cues: CuePlayer?
    /// nil when `offline.speak` is false.
    private let offline: OfflineVoice?

    /// The turn under way, for `release`: whether it was let go, and who holds it.
    private var current: (number: Int, holder: ControlConnection?, released: Bool)?
    private var turns = 0
    private var shuttingDown = false

    /// The record transport's turn (with the stream transport, ListenStream's driver has it).
    private let driver: TurnDriver<Conversation>
    private var machine: TurnMachine { driver.machine }
    private var endpointer: Endpointer
    private var recorded: [Int16] = []
    /// What the record transport's turn starts (the microphone's reader, the request, the answer playing): children of `run()`.
    private let work = WorkGroup()
    private var microphone: WorkGroup.Handle?
    /// The question in flight to /voice, by turn.
    private var asking: (number: Int, work: WorkGroup.Handle)?
    private var playing: (number: Int, work: WorkGroup.Handle)?
    private var plays = 0

    public init(settings: Settings, capture: AudioCapture, playback: Playback, link: Link, bus: EventBus, keeper: StateKeeper,
                stream: ListenStream? = nil, cues: CuePlayer? = nil, offline: OfflineVoice? = nil, muted: Bool = false) {
        self.settings = settings
        self.capture = capture
        self.playback = playback
        self.link = link
        self.bus = bus
        self.keeper = keeper
        self.stream = stream
        self.cues = cues
        self.offline = offline
        self.driver = TurnDriver(TurnMachine(settings: .init(streamsRoom: false, maxUtteranceSamples: settings.endpointing.maxUtteranceMs * 16,
                                                             timeoutSeconds: nil, speaksOffline: offline != nil,
                                                             followUp: settings.followUp),
                                             muted: muted, ready: true))
        self.endpointer = Endpointer(settings: settings.endpointing)
    }

    // MARK: Requests

    /// Captures now and answers; `hold` keeps capturing until `release` (or the holder goes).
    /// `started` is called once the turn is registered, so a `release` from then on finds it.
    public func listen(hold: Bool, holder: ControlConnection?, started: @Sendable () -> Void = {}) async -> ControlResult {
        turns += 1
        let number = turns
        current = (number, hold ? holder : nil, false)
        started()
        let result: ControlResult
        if let stream {
            result = await stream.pushTurn(number: number, hold: hold)
        } else {
            driver.send(.request(number: number, hold: hold, offline: SatelliteError(.serverUnreachable, "")))
            result = await driver.result(of: number)
        }
        if current?.number == number { current = nil }
        return result
    }

    /// Ends a held capture: what was heard so far is sent.
    public func release(from connection: ControlConnection? = nil) async -> Bool {
        guard let turn = current, !turn.released else { return false }
        if let connection, turn.holder != connection { return false }
        current?.released = true
        if let stream {
            await stream.release(turn.number)
        } else {
            await driver.apply(.release(number: turn.number))
        }
        return true
    }

    /// Stops the capture or playback under way; false when nothing was running.
    public func cancel() async -> Bool {
        if noticesSpeaking > 0 {
            noticeStopped = true
            await playback.cancel()
            if current == nil { return true }
        }
        // The turn asked for, even if its request is still queued (the machine ignores one that has ended).
        if let turn = current {
            if let stream {
                await stream.cancel(turn.number)
            } else {
                await driver.apply(.cancel(number: turn.number))
            }
            return true
        }
        // A follow-up is the satellite's own turn, with no request.
        if let stream {
            if await stream.cancelFollowUp() { return true }
            // A reply the server sent on its own (wake mode) is not a turn, but is stopped the same way.
            return await stream.stopPlaying()
        }
        guard let turn = machine.turn, turn.followUp else { return false }
        await driver.apply(.cancel(number: turn.number))
        return true
    }

    /// Asks in words through /ask.
    public func ask(_ text: String) async -> ControlResult {
        if shuttingDown { return .cancelled(.shuttingDown) }
        keeper.update { $0.asking += 1 }
        let result: ControlResult
        do {
            let answer = try await link.ask(text: text, client: settings.name, room: settings.room)
            bus.publish(.reply(text: answer.reply, via: answer.via))
            result = .completed(["reply": .string(answer.reply), "via": .string(answer.via)])
        } catch {
            result = .error(error)
        }
        keeper.update { $0.asking -= 1 }
        guard case .error(let error) = result, error.code == .serverUnreachable, let notice = await offline?.notice() else {
            if case .error = result { await cues?.play(.error, untilEnd: true) }
            return result
        }
        // Not a turn, so the state is told apart from one: speaking, while the notice plays.
        keeper.update { $0.notices += 1 }
        noticesSpeaking += 1
        noticeStopped = false
        var fault: SpeakerFault?
        do throws(ALSAError) {
            _ = try await playback.play(notice)
        } catch {
            fault = SpeakerFault(device: error.device, reason: error.reason)
        }
        noticesSpeaking -= 1
        keeper.update { $0.notices -= 1 }
        if noticeStopped || shuttingDown { return .cancelled(shuttingDown ? .shuttingDown : .cancelledByUser) }
        return TurnMachine.saidBySatellite(result, fault)
    }

    /// Notices being said for `ask` now, and whether `cancel` stopped one.
    private var noticesSpeaking = 0
    private var noticeStopped = false

    /// Runs the turns and what they start, until `shutdown` has ended the turn under way and that work has ended.
    public func run() async {
        async let turns: Void = driveTurns()
        await work.run()
        driver.finish()
        await turns
    }

    private func driveTurns() async {
        await driver.run(self)
    }

    /// Ends the turn under way with `shutting_down`, and refuses new ones; then `run()` ends.
    public func shutdown() async {
        shuttingDown = true
        if let stream {
            await stream.shutdown()
        } else {
            await driver.apply(.shutdown)
        }
        work.finish()
    }

    /// Requests from now on name `room`.
    public func setRoom(_ room: String) { settings.room = room }

    /// Muted, `listen` is refused; a capture under way stops and its caller gets `muted`.
    /// The stream transport's turn is the stream's to end (`ListenStream.setMuted`).
    public func setMuted(_ muted: Bool) async {
        guard stream == nil else { return }
        await driver.apply(muted ? .mute : .unmute)
    }

    // MARK: The record transport's actions

    /// Carries out one of the machine's actions (TurnDriver, one at a time); `audio` is the answer a `play` plays.
    func perform(_ action: TurnAction, audio: PCMAudio?) async {
        switch action {
        case .beginCapture:
            recorded = []
            endpointer = Endpointer(settings: settings.endpointing)
        case .endCapture: submit()
        case .followUp:
            recorded = []
            endpointer = Endpointer(settings: settings.followUp.endpointing(settings.endpointing))
            bus.publish(.followUp)
        case .speechBegan:
            // What was heard before the onset's last half second is only the room waiting.
            recorded = Array(recorded.suffix(FollowUp.preRollSamples))
        case .abandon:
            recorded = []
            asking?.work.cancel()
            asking = nil
        case .openMicrophone(let number): await openMicrophone(for: number)
        case .microphone: await closeMicrophoneUnlessWanted()
        case .cue(let cue): await cues?.play(cue)
        case .errorCue: await cues?.play(.error, untilEnd: true)
        case .phase(let phase): keeper.update { $0.phase = phase }
        case .heard(let text): bus.publish(.heard(text))
        case .reply(let text, let via): bus.publish(.reply(text: text, via: via))
        case .report(let why, let fields): bus.notice(.error, why, fields)
        case .play: if let audio { play(audio) }
        case .stopPlayback: await playback.cancel()
        case .prepareNotice:
            let notice = await offline?.notice()
            driver.send(.notice(ready: notice != nil), audio: notice)
        // The socket's own: nothing to do without one. The result is TurnDriver's to give.
        case .spoke, .dropFrames, .decided, .dropServerTurn, .startTimer, .cancelTimer, .finish: break
        }
    }

    /// Opens the microphone for push turn `number` (a turn that superseded one finds it open); the awake
    /// cue follows, so what is said over it is recorded too. Events that came meanwhile wait in the
    /// driver's queue, so the machine still wants it once it is open.
    private func openMicrophone(for number: Int) async {
        if microphone == nil {
            let frames: AsyncStream<CaptureChunk>
            do {
                frames = try await capture.open()
            } catch {
                driver.send(.microphoneFailed(message: "The microphone \(error.device) cannot be opened: \(error.reason)."))
                return
            }
            microphone = work.start { [weak self] in
                for await chunk in frames { await self?.feed(chunk) }
                await self?.captureEnded()
            }
        }
        driver.send(.microphoneOpened(number: number))
    }

    private func closeMicrophoneUnlessWanted() async {
        guard !machine.wantsMicrophone, let open = microphone else { return }
        microphone = nil
        open.cancel()
        await capture.close()
    }

    private func feed(_ chunk: CaptureChunk) async {
        switch chunk {
        case .samples(let samples):
            guard machine.periodRoute == .turn else { return }
            recorded.append(contentsOf: samples)
            let decision = endpointer.feed(samples)
            await driver.apply(.period(samples: samples.count, decision: decision))
        case .failed(let error):
            await driver.apply(.microphoneFailed(message: "The microphone \(error.device) failed while listening: \(error.reason)."))
        }
    }

    /// The capture's stream ended on its own while the turn was listening.
    private func captureEnded() async {
        guard machine.periodRoute == .turn, microphone != nil else { return }
        await driver.apply(.microphoneFailed(message: "The microphone gave no sound at all."))
    }

    /// Sends what was recorded to /voice.
    private func submit() {
        guard let number = machine.turn?.number else { return }
        let wav = WAV.encode(PCMAudio(sampleRate: 16000, channels: 1, samples: recorded))
        recorded = []
        let task = work.start { [link, settings] in
            do throws(SatelliteError) {
                let answer = try await link.voice(wav: wav, client: settings.name, room: settings.room)
                await self.answered(number, answer)
            } catch {
                await self.failed(number, error)
            }
        }
        asking = (number, task)
    }

    private func answered(_ number: Int, _ answer: VoiceAnswer) async {
        guard asking?.number == number else { return }
        asking = nil
        // For scripts/bench: how long reading the answer took (see HTTPClient).
        bus.notice(.debug, "Answer decoded.", ["monotonic_ns": String(MonotonicClock.nanoseconds())])
        await driver.apply(.answered(heard: answer.heard, reply: answer.reply, via: answer.via, audio: answer.audio != nil))
        guard let wav = answer.audio, machine.turn?.number == number else { return }
        do {
            let audio = try WAV.decode(wav)
            await driver.apply(.audio, audio: audio)
        } catch {
            let why = "The server's spoken answer is not a WAV this satellite can play: \(error)."
            await driver.apply(.badAudio(why: why, bytes: wav.count))
        }
    }

    private func failed(_ number: Int, _ error: SatelliteError) async {
        guard asking?.number == number else { return }
        asking = nil
        await driver.apply(.requestFailed(error))
    }

    /// Plays the answer (or the notice) on a task of its own, so `cancel` is taken while it plays.
    private func play(_ audio: PCMAudio) {
        if let current = playing { current.work.cancel() }
        plays += 1
        let number = plays
        let task = work.start { [playback] in
            var fault: SpeakerFault?
            do throws(ALSAError) {
                _ = try await playback.play(audio)
            } catch {
                fault = SpeakerFault(device: error.device, reason: error.reason)
            }
            await self.played(number, fault)
        }
        playing = (number, task)
    }

    private func played(_ number: Int, _ fault: SpeakerFault?) async {
        guard playing?.number == number else { return }
        playing = nil
        await driver.apply(.played(failure: fault, sameConnection: true))
    }
}

extension Conversation: TurnEffects {}
