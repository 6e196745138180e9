// One turn at a time: listen to the room until the person stops, send what was
// said to the server, play the answer. It owns the turn under way, so a second
// `listen` can supersede the first (whose caller is told so), `cancel` can stop
// it, and shutdown can end it, each with exactly one result for its caller.
// The microphone is closed before the answer plays, so the reply is never
// recorded as the next question. The cues sound where their moments happen:
// awake once the microphone is open (so nothing said over it is lost), done
// when the utterance ends, error on an error result. When the house cannot be
// reached, the satellite says so itself (OfflineVoice) and the result says
// `via: "satellite"`. Muted, it refuses to listen; a mute in the middle of a
// capture drops what was heard (nothing is sent), while a turn past its capture
// (thinking, speaking) finishes and its answer plays.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SatelliteCore

/// Runs `listen` and `ask` requests.
public actor Conversation {
    public struct Settings: Sendable {
        public var name: String
        public var room: String
        public var endpointing: Endpointer.Settings

        public init(name: String, room: String, endpointing: Endpointer.Settings) {
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

    /// The turn under way, and why it was stopped if it was.
    private struct Turn {
        let number: Int
        let task: Task<ControlResult, Never>
        var stopReason: CancelReason?
        var holdReleased = false
        var holder: ControlConnection?
        /// The record transport's capture is under way (the microphone is open for it).
        var capturing = false
        /// Stopped by a mute while capturing: the result is `muted`.
        var mutedWhileCapturing = false
    }
    private var turn: Turn?
    private var turns = 0
    private var shuttingDown = false
    private var muted: Bool

    public init(settings: Settings, capture: AudioCapture, playback: Playback, link: Link, bus: EventBus, keeper: StateKeeper,
                stream: ListenStream? = nil, cues: CuePlayer? = nil, offline: OfflineVoice? = nil, muted: Bool = false) {
        self.settings = settings
        self.muted = muted
        self.capture = capture
        self.playback = playback
        self.link = link
        self.bus = bus
        self.keeper = keeper
        self.stream = stream
        self.cues = cues
        self.offline = offline
    }

    // MARK: Requests

    /// Captures now and answers; `hold` keeps capturing until `release` (or the holder goes).
    /// `started` is called once the turn is registered, so a `release` from then on finds it.
    public func listen(hold: Bool, holder: ControlConnection?, started: @Sendable () -> Void = {}) async -> ControlResult {
        if shuttingDown { return .cancelled(.shuttingDown) }
        if muted { return .error(.microphoneMuted) }
        // The turn under way ends first (its caller is told it was superseded), so two
        // turns never share the microphone.
        while let old = turn {
            stopTurn(.superseded)
            await playback.cancel()
            _ = await old.task.value
            if turn?.number == old.number { turn = nil }
        }
        if shuttingDown { return .cancelled(.shuttingDown) }
        turns += 1
        let number = turns
        let task = Task { await self.runTurn(number: number, hold: hold) }
        turn = Turn(number: number, task: task, holder: hold ? holder : nil)
        started()
        let result = await task.value
        var mutedWhileCapturing = false
        if turn?.number == number {
            mutedWhileCapturing = turn?.mutedWhileCapturing ?? false
            turn = nil
            keeper.update { $0.phase = nil }
        }
        return mutedWhileCapturing ? .error(.mutedWhileListening) : result
    }

    /// Ends a held capture: what was heard so far is sent.
    public func release(from connection: ControlConnection? = nil) -> Bool {
        guard var current = turn, !current.holdReleased else { return false }
        if let connection, current.holder != connection { return false }
        current.holdReleased = true
        turn = current
        return true
    }

    /// Stops the capture or playback under way; false when nothing was running.
    public func cancel() async -> Bool {
        if noticesSpeaking > 0 {
            noticeStopped = true
            await playback.cancel()
            if turn == nil { return true }
        }
        // A reply the server sent on its own (wake mode) is not a turn here, but is stopped the same way.
        guard turn != nil else { return await stream?.stopPlaying() ?? false }
        stopTurn(.cancelledByUser)
        await playback.cancel()
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
        guard let notice = await noticeFor(result) else {
            await cueError(result)
            return result
        }
        // Not a turn, so the state is told apart from one: speaking, while the notice plays.
        keeper.update { $0.notices += 1 }
        noticesSpeaking += 1
        noticeStopped = false
        let ending = await speak(notice)
        noticesSpeaking -= 1
        keeper.update { $0.notices -= 1 }
        if noticeStopped || shuttingDown { return .cancelled(shuttingDown ? .shuttingDown : .cancelledByUser) }
        return saidBySatellite(result, ending)
    }

    /// Notices being said for `ask` now, and whether `cancel` stopped one.
    private var noticesSpeaking = 0
    private var noticeStopped = false

    // MARK: Cues and the satellite's own voice

    /// The notice to say for `result`: only when the house could not be reached, and `offline.speak` is on.
    private func noticeFor(_ result: ControlResult) async -> PCMAudio? {
        guard case .error(let error) = result, error.code == .serverUnreachable, let offline else { return nil }
        return await offline.notice()
    }

    /// Plays the notice; what it says about the speaker goes into the result.
    private func speak(_ notice: PCMAudio) async -> Result<PlaybackOutcome, ALSAError> {
        do throws(ALSAError) {
            return .success(try await playback.play(notice))
        } catch {
            return .failure(error)
        }
    }

    /// The error result, marked as said by the satellite when the notice reached the speaker.
    private func saidBySatellite(_ result: ControlResult, _ ending: Result<PlaybackOutcome, ALSAError>) -> ControlResult {
        guard case .error(let error) = result else { return result }
        switch ending {
        case .success:
            return .error(SatelliteError(error.code, error.message + " The satellite said so itself.", via: "satellite"))
        case .failure(let speaker):
            return .error(SatelliteError(error.code, error.message
                + " The satellite could not say so either: the speaker \(speaker.device) failed: \(speaker.reason)."))
        }
    }

    /// The error sound, for an error result that was not spoken; the result follows once it has been heard.
    private func cueError(_ result: ControlResult) async {
        guard case .error = result else { return }
        await cues?.play(.error, untilEnd: true)
    }

    /// Ends the turn under way with `shutting_down`, and refuses new ones.
    public func shutdown() async {
        shuttingDown = true
        if let current = turn {
            stopTurn(.shuttingDown)
            await playback.cancel()
            _ = await current.task.value
        }
    }

    /// Requests from now on name `room`.
    public func setRoom(_ room: String) { settings.room = room }

    /// Muted, `listen` is refused; a capture under way (record transport) stops and its caller
    /// gets `muted`. The stream transport's turn is the stream's to end (`ListenStream.setMuted`).
    public func setMuted(_ muted: Bool) {
        self.muted = muted
        guard muted, var current = turn, current.capturing else { return }
        current.mutedWhileCapturing = true
        turn = current
        stopTurn(.cancelledByUser)
    }

    public func ping() -> Bool { true }

    private func stopTurn(_ reason: CancelReason) {
        guard var current = turn else { return }
        if current.stopReason == nil { current.stopReason = reason }
        turn = current
        current.task.cancel()
    }

    private func stopReason(_ number: Int) -> CancelReason {
        turn.flatMap { $0.number == number ? $0.stopReason : nil } ?? .cancelledByUser
    }

    private func setCapturing(_ number: Int, _ capturing: Bool) {
        guard var current = turn, current.number == number else { return }
        current.capturing = capturing
        turn = current
    }

    private func released(_ number: Int) -> Bool {
        turn.map { $0.number == number && $0.holdReleased } ?? false
    }

    // MARK: The turn

    private func runTurn(number: Int, hold: Bool) async -> ControlResult {
        let result = await turnResult(number: number, hold: hold)
        if Task.isCancelled { return .cancelled(stopReason(number)) }
        guard let notice = await noticeFor(result) else {
            await cueError(result)
            return result
        }
        keeper.update { $0.phase = .speaking }
        let ending = await speak(notice)
        if Task.isCancelled { return .cancelled(stopReason(number)) }
        return saidBySatellite(result, ending)
    }

    /// The turn up to its result: listened, sent, answered and played.
    private func turnResult(number: Int, hold: Bool) async -> ControlResult {
        if let stream {
            let result = await stream.pushTurn(hold: hold) { [weak self] in await self?.released(number) ?? true }
            return Task.isCancelled ? .cancelled(stopReason(number)) : result
        }
        keeper.update { $0.phase = .listening }
        setCapturing(number, true)
        let recording = await record(number: number, hold: hold)
        setCapturing(number, false)
        let recorded: [Int16]
        switch recording {
        case .heard(let samples): recorded = samples
        case .ended(let result): return result
        }
        if Task.isCancelled { return .cancelled(stopReason(number)) }

        keeper.update { $0.phase = .thinking }
        await cues?.play(.done)
        let wav = WAV.encode(PCMAudio(sampleRate: 16000, channels: 1, samples: recorded))
        let answer: VoiceAnswer
        do {
            answer = try await link.voice(wav: wav, client: settings.name, room: settings.room)
            // For scripts/bench: how long reading the answer took (see HTTPClient).
            bus.notice(.debug, "Answer decoded.", ["monotonic_ns": String(MonotonicClock.nanoseconds())])
        } catch {
            if Task.isCancelled { return .cancelled(stopReason(number)) }
            return .error(error)
        }
        if Task.isCancelled { return .cancelled(stopReason(number)) }
        if !answer.heard.isEmpty { bus.publish(.heard(answer.heard)) }
        if answer.heard.isEmpty && answer.reply.isEmpty { return .cancelled(.nothingHeard) }
        bus.publish(.reply(text: answer.reply, via: answer.via))

        if let audio = answer.audio {
            let pcm: PCMAudio
            do {
                pcm = try WAV.decode(audio)
            } catch {
                return .failure(.badAnswer, "The server's spoken answer is not a WAV this satellite can play: \(error).")
            }
            keeper.update { $0.phase = .speaking }
            do {
                _ = try await playback.play(pcm)
            } catch {
                return .failure(.speakerUnavailable, "The answer could not be played on \(error.device): \(error.reason).")
            }
            if Task.isCancelled { return .cancelled(stopReason(number)) }
        }
        return .completed(["heard": .string(answer.heard), "reply": .string(answer.reply), "via": .string(answer.via)])
    }

    private enum Recording {
        case heard([Int16])
        /// The turn ends here, with this result.
        case ended(ControlResult)
    }

    /// Records until the endpointer (or the holder) ends the utterance.
    private func record(number: Int, hold: Bool) async -> Recording {
        let frames: AsyncStream<CaptureChunk>
        do {
            frames = try await capture.open()
        } catch {
            return .ended(.failure(.microphoneUnavailable, "The microphone \(error.device) cannot be opened: \(error.reason)."))
        }
        // The microphone is open first, so what is said over the sound is recorded too.
        await cues?.play(.awake)
        var endpointer = Endpointer(settings: settings.endpointing)
        let longest = settings.endpointing.maxUtteranceMs * 16
        var recorded: [Int16] = []
        var outcome: Recording?
        reading: for await chunk in frames {
            switch chunk {
            case .samples(let samples):
                recorded.append(contentsOf: samples)
                let decision = endpointer.feed(samples)
                if hold {
                    // Held: the caller decides when it ends; only the longest utterance still stops it.
                    if released(number) || recorded.count >= longest { break reading }
                } else {
                    switch decision {
                    case .ended: break reading
                    case .nothingHeard: outcome = .ended(.cancelled(.nothingHeard)); break reading
                    case .waiting, .speaking: break
                    }
                }
            case .failed(let error):
                outcome = .ended(.failure(.microphoneUnavailable, "The microphone \(error.device) failed while listening: \(error.reason)."))
                break reading
            }
        }
        await capture.close()
        if Task.isCancelled { return .ended(.cancelled(stopReason(number))) }
        if let outcome { return outcome }
        if recorded.isEmpty {
            return .ended(.failure(.microphoneUnavailable, "The microphone gave no sound at all."))
        }
        return .heard(recorded)
    }
}
