// The one owner of the speaker. While the echo is cancelled (and the microphone
// is not muted), one device is kept open, writing silence between sounds, and
// every reply and cue is played into it (SteadySpeaker), so the echo's path does
// not move from one answer to the next; it is opened at the start and closed once
// cancelling stops. Otherwise each reply opens the device at the reply's own
// rate and channels (plug converts), plays it and closes it, so an idle speaker
// costs nothing. Both are driven on the audio thread (AudioEngine, which opens
// and closes them too), so nothing blocks the actor. A new reply or `cancel()`
// stops the one playing within one ALSA period; the old device is closed before a new opens.
// Cues (the awake, done and error sounds) go through here too, so they never
// play over an answer: a cue stops an earlier cue, an answer stops a cue, and
// a cue that comes while an answer plays is skipped (it would be late anyway).
// What it starts (the retries, the hop back from the audio thread when a cue
// ends) is a child of its `run()`.
import SatelliteCore
import Synchronization

/// Owns the playback device: plays one reply at a time and watches the speaker's health.
public actor Playback {
    public let device: String
    private let bus: EventBus
    private let engine: AudioEngine
    private var watch: DeviceWatch
    private var current: Job?
    private let work = WorkGroup()
    /// Whether the speaker is kept open while the echo is cancelled (`audio.echoCancel`), whether
    /// the microphone is muted (nothing is cancelled then), and the device kept open.
    private let keepsOpen: Bool
    private var muted: Bool
    private var steady: SteadySpeaker?

    /// One reply or cue being played: its cancel flag, and a way to await its end.
    private final class Job: Sendable {
        let isCue: Bool
        let cancelled = Atomic<Bool>(false)
        let ended = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        init(isCue: Bool) { self.isCue = isCue }

        func cancel() { cancelled.store(true, ordering: .releasing) }
        var isDone: Bool { ended.withLock { $0.done } }
        var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

        func end() {
            let waiters = ended.withLock { state in
                state.done = true
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }

        func done() async {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let done = ended.withLock { state in
                    if !state.done { state.waiters.append(waiter) }
                    return state.done
                }
                if done { waiter.resume() }
            }
        }
    }

    /// `retry` is the back-off between probes of a broken speaker; `keepOpen`, whether the speaker is
    /// kept open while the echo is cancelled (`audio.echoCancel`).
    public init(device: String, bus: EventBus, retry: Backoff = Backoff(first: .seconds(1), cap: .seconds(30)),
                engine: AudioEngine = .shared, keepOpen: Bool = false, muted: Bool = false) {
        self.device = device
        self.engine = engine
        self.bus = bus
        self.keepsOpen = keepOpen
        self.muted = muted
        self.watch = DeviceWatch(device: device, bus: bus, backoff: retry, work: work, event: SatelliteEvent.speaker)
    }

    /// Runs what the speaker starts until cancelled, then stops what plays. Whoever makes a
    /// Playback runs it: without run(), no retry is made and an ended cue is not let go.
    public func run() async {
        await work.run {
            watch.stop()
            await stopCurrent()
            steady?.close()
            steady = nil
        }
    }

    /// Whether a sound goes to the steady speaker now.
    private var wantsSteady: Bool { keepsOpen && !muted && engine.cancelsEcho }

    /// Muted, nothing is cancelled: the speaker is closed once idle and opened for each sound, as
    /// with echo cancelling off; unmuted, it is kept open again.
    public func setMuted(_ muted: Bool) async {
        self.muted = muted
        if muted {
            steady?.close()
            steady = nil
        } else {
            _ = await probe()
        }
    }

    /// Plays `audio` and returns when it has been heard, or was cancelled (by `cancel()`,
    /// by a newer `play`, or by cancelling the calling task).
    public func play(_ audio: PCMAudio) async throws(ALSAError) -> PlaybackOutcome {
        await stopCurrent()
        let job = Job(isCue: false)
        let speaker = try await open(for: audio, job)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (finished: CheckedContinuation<Result<PlaybackOutcome, ALSAError>, Never>) in
                start(audio, on: speaker, job) { finished.resume(returning: $0) }
            }
        } onCancel: {
            job.cancel()
        }
        if current === job { current = nil }
        if case .failure(let error) = result { failed(error) }
        return try result.get()
    }

    /// Starts a cue and returns once it is playing, or with `untilEnd` once it has ended; false
    /// when it was skipped because an answer is playing, or the speaker failed (reported like any failure).
    @discardableResult
    public func startCue(_ audio: PCMAudio, untilEnd: Bool = false) async -> Bool {
        if let playing = current, !playing.isDone, !playing.isCue { return false }
        await stopCurrent()
        let job = Job(isCue: true)
        guard let speaker = try? await open(for: audio, job) else { return false }
        start(audio, on: speaker, job) { [weak self, work] result in
            work.start { [weak self] in await self?.cueEnded(job, result) }
        }
        if untilEnd { await job.done() }
        return true
    }

    private func cueEnded(_ job: Job, _ result: Result<PlaybackOutcome, ALSAError>) {
        if current === job { current = nil }
        if case .failure(let error) = result { failed(error) }
    }

    /// Stops whatever plays and returns once its device is closed.
    private func stopCurrent() async {
        while let playing = current {
            playing.cancel()
            await playing.done()
            if current === playing { current = nil }
        }
    }

    /// Makes `job` the one playing and opens the speaker for `audio` on the audio thread (or takes the
    /// steady one). A newer play while it opens finds `job` current and cancels it; a failed open ends `job`.
    private func open(for audio: PCMAudio, _ job: Job) async throws(ALSAError) -> Speaker {
        current = job
        let (device, engine) = (self.device, self.engine)
        do {
            let speaker: Speaker
            if let steady = try await openSteady(reserving: true) {
                speaker = .steady(steady)
            } else {
                speaker = .once(try await engine.run { () throws(ALSAError) in
                    try ALSAPlaybackDevice.open(device: device, rate: audio.sampleRate, channels: audio.channels, engine: engine)
                })
            }
            watch.works()
            return speaker
        } catch {
            if current === job { current = nil }
            job.end()
            failed(error)
            throw error
        }
    }

    /// The steady speaker when it is wanted, opened if it is not open (nil: it is not wanted); the
    /// one kept open is closed once it is not. `reserving`: held open for a sound to start on it.
    private func openSteady(reserving: Bool) async throws(ALSAError) -> SteadySpeaker? {
        guard wantsSteady else {
            steady?.close()
            steady = nil
            return nil
        }
        if let steady, reserving ? steady.reserve() : steady.isOpen { return steady }
        let (device, engine) = (self.device, self.engine)
        // Asked again on the audio thread, after the processing was set up there.
        let opened = try await engine.run { () throws(ALSAError) -> SteadySpeaker? in
            engine.cancelsEcho ? try SteadySpeaker.open(device: device, engine: engine) : nil
        }
        guard let opened else { return nil }
        if reserving { _ = opened.reserve() }
        bus.notice(.info, "The speaker is kept open while the echo is cancelled, playing silence between sounds.",
                   ["device": device, "rate": String(opened.rate)])
        opened.start { [weak self, work] error in
            work.start { [weak self] in await self?.lost(error, opened) }
        }
        steady = opened
        return opened
    }

    /// The steady speaker failed while nothing played: reported, and retried, as any failure.
    private func lost(_ error: ALSAError, _ speaker: SteadySpeaker) {
        if steady === speaker { steady = nil }
        failed(error)
    }

    /// A speaker opened for one sound, or the one kept open.
    private enum Speaker {
        case once(ALSAPlaybackDevice)
        case steady(SteadySpeaker)
    }

    /// Plays on the audio thread; `finished` is called there once the sound has ended.
    private nonisolated func start(_ audio: PCMAudio, on speaker: Speaker, _ job: Job,
                                   finished: @escaping @Sendable (Result<PlaybackOutcome, ALSAError>) -> Void) {
        let bus = self.bus
        // For scripts/bench: the end of "answer to first frame played" (see HTTPClient), and when it is heard. Not for cues.
        let firstFrame: @Sendable (UInt64, UInt64) -> Void = { written, heard in
            guard !job.isCue else { return }
            bus.notice(.debug, "First frame handed to ALSA.", ["monotonic_ns": String(written), "heard_monotonic_ns": String(heard)])
        }
        let ended: @Sendable (Result<PlaybackOutcome, ALSAError>) -> Void = { result in
            // For scripts/bench: the end of "wake word over an answer to playback stopped".
            if !job.isCue, case .success(let outcome) = result, outcome.ending == .cancelled {
                bus.notice(.debug, "Playback stopped.", ["monotonic_ns": String(MonotonicClock.nanoseconds())])
            }
            job.end()
            finished(result)
        }
        switch speaker {
        case .steady(let steady):
            steady.start(audio, isCancelled: { job.isCancelled }, firstFrame: firstFrame, finished: ended)
        case .once(let device):
            device.start(audio, isCancelled: { job.isCancelled }) { result in
                // Opened empty, the device starts with its first frame once the buffer is full, in the same wake-up.
                if let written = device.firstFrameMonotonicNs { firstFrame(written, written) }
                ended(result)
            }
        }
    }

    /// Stops the reply playing now, within one ALSA period; its `play` returns `.cancelled`.
    public func cancel() {
        current?.cancel()
        engine.wakeUp()
    }

    /// Opens and closes the speaker once, to learn whether it works (at start, for status); or, while
    /// the echo is cancelled, opens the one kept open.
    @discardableResult
    public func probe() async -> DeviceHealth {
        try? await tryOpen()
        return watch.health
    }

    /// `probe`, saying why the speaker cannot be opened (for doctor). While it plays, or is kept
    /// open, it is known to work.
    public func tryOpen() async throws(ALSAError) {
        guard current?.isDone ?? true else { return }
        let device = self.device
        do {
            if try await openSteady(reserving: false) != nil {
                watch.works()
                return
            }
            try await engine.run { () throws(ALSAError) in try ALSAPlaybackDevice.open(device: device, rate: 16000, channels: 1).close() }
            watch.works()
        } catch {
            failed(error)
            throw error
        }
    }

    /// The health as last published.
    public var health: DeviceHealth { watch.health }

    private func failed(_ error: ALSAError) {
        watch.failed(error) { [weak self] in
            guard let self else { return true }
            return await self.probe().ok == true
        }
    }
}
