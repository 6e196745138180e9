// The one owner of the speaker. Each reply opens the device at the reply's own
// rate and channels (plug converts), plays it on the audio thread (AudioEngine,
// which opens and closes it too) and closes it, so nothing blocks the actor. A new reply or `cancel()` stops the one
// playing within one ALSA period; the old device is closed before a new opens.
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

    /// `retry` is the back-off between probes of a broken speaker.
    public init(device: String, bus: EventBus, retry: Backoff = Backoff(first: .seconds(1), cap: .seconds(30)),
                engine: AudioEngine = .shared) {
        self.device = device
        self.engine = engine
        self.bus = bus
        self.watch = DeviceWatch(device: device, bus: bus, backoff: retry, work: work, event: SatelliteEvent.speaker)
    }

    /// Runs what the speaker starts until cancelled, then stops what plays. Whoever makes a
    /// Playback runs it: without run(), no retry is made and an ended cue is not let go.
    public func run() async {
        await work.run {
            watch.stop()
            await stopCurrent()
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

    /// Makes `job` the one playing and opens the speaker for `audio` on the audio thread. A newer
    /// play while it opens finds `job` current and cancels it; a failed open ends `job`.
    private func open(for audio: PCMAudio, _ job: Job) async throws(ALSAError) -> ALSAPlaybackDevice {
        current = job
        let (device, engine) = (self.device, self.engine)
        do {
            let speaker = try await engine.run { () throws(ALSAError) in
                try ALSAPlaybackDevice.open(device: device, rate: audio.sampleRate, channels: audio.channels, engine: engine)
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

    /// Plays on the audio thread; `finished` is called there once the device is closed.
    private nonisolated func start(_ audio: PCMAudio, on speaker: ALSAPlaybackDevice, _ job: Job,
                                   finished: @escaping @Sendable (Result<PlaybackOutcome, ALSAError>) -> Void) {
        let bus = self.bus
        speaker.start(audio, isCancelled: { job.isCancelled }) { result in
            // For scripts/bench: the end of "answer to first frame played" (see HTTPClient). Not for cues.
            if !job.isCue, let stamp = speaker.firstFrameMonotonicNs {
                bus.notice(.debug, "First frame handed to ALSA.", ["monotonic_ns": String(stamp)])
            }
            // For scripts/bench: the end of "wake word over an answer to playback stopped".
            if !job.isCue, case .success(let outcome) = result, outcome.ending == .cancelled {
                bus.notice(.debug, "Playback stopped.", ["monotonic_ns": String(MonotonicClock.nanoseconds())])
            }
            job.end()
            finished(result)
        }
    }

    /// Stops the reply playing now, within one ALSA period; its `play` returns `.cancelled`.
    public func cancel() {
        current?.cancel()
        engine.wakeUp()
    }

    /// Opens and closes the speaker once, to learn whether it works (at start, for status).
    @discardableResult
    public func probe() async -> DeviceHealth {
        try? await tryOpen()
        return watch.health
    }

    /// `probe`, saying why the speaker cannot be opened (for doctor). While it plays it is known to work.
    public func tryOpen() async throws(ALSAError) {
        guard current?.isDone ?? true else { return }
        let device = self.device
        do {
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
