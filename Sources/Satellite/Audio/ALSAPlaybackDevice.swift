// A speaker that plays one PCMAudio, driven by the audio thread (AudioEngine):
// written a period at a time as poll says it wants one, so a cancel is noticed
// within one ALSA period. Easy to get wrong: snd_pcm_drain blocks for the whole
// buffer, so the end is awaited a period at a time (by the engine's timer, not
// a sleep, so the microphone on the same thread goes on) and only the last
// period is drained; and an underrun is recovered, not treated as failure.
import CALSA
import Glibc
import SatelliteCore
import Synchronization

/// How a playback ended.
public struct PlaybackOutcome: Sendable, Equatable {
    public enum Ending: Sendable, Equatable {
        /// Everything was played and drained.
        case finished
        /// Stopped early by a cancel; what was queued was dropped.
        case cancelled
    }

    public var ending: Ending
    /// Frames handed to ALSA, at the audio's own rate.
    public var framesWritten: Int

    public init(ending: Ending, framesWritten: Int) {
        self.ending = ending
        self.framesWritten = framesWritten
    }
}

/// One open playback PCM, for one audio.
///
/// Threads: `open` runs on the caller's thread (Playback calls it on the audio thread). After
/// `start` only the audio thread touches the handle, and closes it when the audio has ended.
public final class ALSAPlaybackDevice: AudioEngineSide, SpeakerOutput, @unchecked Sendable {
    public let device: String
    public let rate: Int
    public let channels: Int
    public let periodFrames: Int

    private let pcm: OpaquePointer
    private let engine: AudioEngine
    private let life = Mutex<(started: Bool, closed: Bool)>((false, false))
    private let underrunCount = Atomic<Int>(0)
    /// When snd_pcm_writei first accepted frames (CLOCK_MONOTONIC ns), for scripts/bench.
    /// Set on the audio thread; read once the playing has ended.
    public private(set) var firstFrameMonotonicNs: UInt64?

    /// The audio thread's, while it plays: what, how far, and what is left to do.
    private var audio = PCMAudio(sampleRate: 16000, channels: 1, samples: [])
    private var written = 0
    private var stage = Stage.writing
    private var nextCheck: UInt64 = 0
    private var isCancelled: @Sendable () -> Bool = { false }
    private var finished: @Sendable (Result<PlaybackOutcome, ALSAError>) -> Void = { _ in }

    private enum Stage {
        /// Writing a period whenever the device has room for one.
        case writing
        /// All written: waiting, a period at a time, until about one period is left.
        case waiting(stalled: Int, lastDelay: snd_pcm_sframes_t)
        /// The last period draining, watched a period at a time.
        case draining(waits: Int, drained: Int32)
    }

    private init(device: String, rate: Int, channels: Int, pcm: ALSAPCM, engine: AudioEngine) {
        self.device = device
        self.rate = rate
        self.channels = channels
        self.periodFrames = pcm.periodFrames
        self.pcm = pcm.handle
        self.engine = engine
    }

    deinit { close() }

    /// Opens the device for audio of this rate and channel count, S16_LE interleaved.
    /// Through `plug` (as in `default`) a 24 kHz stereo reply plays on a 16 kHz mono card.
    public static func open(device: String, rate: Int, channels: Int,
                            engine: AudioEngine = .shared) throws(ALSAError) -> ALSAPlaybackDevice {
        // 20 ms periods, 8 of them: small enough that a cancel is quick.
        let pcm = try ALSAPCM.open(device: device, stream: SND_PCM_STREAM_PLAYBACK, rate: rate,
                                   channels: channels, periodFrames: max(1, rate / 50))
        return ALSAPlaybackDevice(device: device, rate: rate, channels: channels, pcm: pcm, engine: engine)
    }

    /// Underruns recovered so far (the writer fell behind the card).
    public var underruns: Int { underrunCount.load(ordering: .relaxed) }

    /// Plays `audio` and returns once it has been heard or `isCancelled` said stop, which is
    /// checked before every period written. The audio must have the rate and channels the
    /// device was opened with. The device is closed by then; it plays once.
    public func play(_ audio: PCMAudio, isCancelled: @escaping @Sendable () -> Bool) async throws(ALSAError) -> PlaybackOutcome {
        let result = await withCheckedContinuation { (done: CheckedContinuation<Result<PlaybackOutcome, ALSAError>, Never>) in
            start(audio, isCancelled: isCancelled) { done.resume(returning: $0) }
        }
        return try result.get()
    }

    /// `play`, telling the end to `finished`, on the audio thread, once the device is closed.
    public func start(_ audio: PCMAudio, isCancelled: @escaping @Sendable () -> Bool,
                      finished: @escaping @Sendable (Result<PlaybackOutcome, ALSAError>) -> Void) {
        precondition(audio.sampleRate == rate && audio.channels == channels,
                     "audio is \(audio.sampleRate) Hz × \(audio.channels), device opened for \(rate) Hz × \(channels)")
        precondition(life.withLock { life in defer { life.started = true }; return !life.started && !life.closed },
                     "a playback device plays once")
        self.audio = audio
        self.isCancelled = isCancelled
        self.finished = finished
        engine.attach(self)
    }

    /// Closes a device that is not playing (one that plays closes itself when it ends).
    public func close() {
        let closeNow = life.withLock { life in
            defer { life.closed = true }
            return !life.closed && !life.started
        }
        if closeNow { snd_pcm_close(pcm) }
    }

    // MARK: On the audio thread

    var handle: OpaquePointer { pcm }

    var polls: Bool {
        if case .writing = stage { return true }
        return false
    }

    var deadline: UInt64? { polls ? nil : nextCheck }

    private var periodNs: UInt64 { UInt64(max(1, periodFrames * 1000 / rate)) * 1_000_000 }

    func begin() -> Bool {
        engine.owner.assertCurrent()
        if audio.frameCount == 0 { return end(.success(PlaybackOutcome(ending: .finished, framesWritten: 0))) }
        engine.speakerOpened(self, pcm: pcm)
        // Filled at once: a device not started yet may not say (through poll) that it has room.
        return service(revents: 0, now: MonotonicClock.nanoseconds())
    }

    func service(revents: UInt16, now: UInt64) -> Bool {
        engine.owner.assertCurrent()
        if isCancelled() { return stopNow() }
        switch stage {
        case .writing:
            // Tried at every wake-up, not only when poll says so: a write with no room costs an EAGAIN.
            do throws(ALSAError) {
                try write()
            } catch {
                return end(.failure(error))
            }
            guard written == audio.frameCount else { return true }
            if isCancelled() { return stopNow() }
            // Audio shorter than the start threshold has not started yet.
            if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED, written > 0 {
                let started = snd_pcm_start(pcm)
                if started < 0 { return end(.failure(ALSAError(function: "snd_pcm_start", code: started, device: device))) }
            }
            stage = .waiting(stalled: 0, lastDelay: .max)
            return wait(now: now)
        case .waiting:
            guard now >= nextCheck else { return true }
            return wait(now: now)
        case .draining(let waits, let drained):
            guard now >= nextCheck else { return true }
            if snd_pcm_state(pcm) == SND_PCM_STATE_DRAINING, drained == -EAGAIN, waits < 25 {
                stage = .draining(waits: waits + 1, drained: drained)
                nextCheck = now + periodNs
                return true
            }
            if snd_pcm_state(pcm) == SND_PCM_STATE_DRAINING { snd_pcm_drop(pcm) }
            if drained < 0, drained != -EPIPE, drained != -EAGAIN {
                return end(.failure(ALSAError(function: "snd_pcm_drain", code: drained, device: device)))
            }
            return end(.success(PlaybackOutcome(ending: .finished, framesWritten: written)))
        }
    }

    /// Writes a period at a time while the device takes them, checking for a cancel before each.
    private func write() throws(ALSAError) {
        let total = audio.frameCount
        while written < total, !isCancelled() {
            let count = min(periodFrames, total - written)
            let result: Int = audio.samples.withUnsafeBufferPointer { samples in
                let from = samples.baseAddress! + written * channels
                let result = snd_pcm_writei(pcm, from, snd_pcm_uframes_t(count))
                // The echo's reference: what was written, and when it will be heard.
                if result > 0 { engine.speakerWrote(UnsafeBufferPointer(start: from, count: result * channels), frames: result, by: self, pcm: pcm) }
                return result
            }
            switch try ALSAPCM.written(result, pcm: pcm, device: device) {
            case .frames(let count):
                if firstFrameMonotonicNs == nil { firstFrameMonotonicNs = MonotonicClock.nanoseconds() }
                written += count
            case .full:
                return
            case .again(let underran):
                if underran { underrunCount.add(1, ordering: .relaxed) }
            }
        }
    }

    /// One look, a period after the last, at what is left to play; the last period drains.
    private func wait(now: UInt64) -> Bool {
        guard case .waiting(var stalled, let lastDelay) = stage else { return true }
        // An underrun recovered late in the reply leaves the device prepared with less than its
        // start threshold queued, so it is started again here; and a device whose queue stops
        // shrinking is given up on after 25 periods rather than leaving the satellite speaking for ever.
        if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED { _ = snd_pcm_start(pcm) }
        var delay: snd_pcm_sframes_t = 0
        // An underrun means everything queued has been played. Behind `plug` converting 22.05 kHz
        // (espeak-ng's rate, and `say`'s) snd_pcm_delay still succeeds then, with a delay that
        // never falls, so the state is checked rather than waiting out the stall. An error from
        // snd_pcm_delay is an underrun too.
        if stalled < 25, snd_pcm_state(pcm) != SND_PCM_STATE_XRUN, snd_pcm_delay(pcm, &delay) == 0, delay > periodFrames {
            stalled = delay < lastDelay ? 0 : stalled + 1
            stage = .waiting(stalled: stalled, lastDelay: delay)
            nextCheck = now + periodNs
            return true
        }
        // The last period drains without blocking, watched a period at a time and given up
        // after a bounded wait: a blocking drain once never returned.
        stage = .draining(waits: 0, drained: snd_pcm_drain(pcm))
        nextCheck = now
        return service(revents: 0, now: now)
    }

    private func stopNow() -> Bool {
        snd_pcm_drop(pcm)
        return end(.success(PlaybackOutcome(ending: .cancelled, framesWritten: written)))
    }

    /// Closes the device and tells how the playing ended; false, for the engine to let go.
    private func end(_ result: Result<PlaybackOutcome, ALSAError>) -> Bool {
        snd_pcm_close(pcm)
        life.withLock { $0.closed = true }
        audio = PCMAudio(sampleRate: rate, channels: channels, samples: [])
        // Let go of both closures: Playback's name this device, and kept, the two held each
        // other and every reply and cue ever played stayed in memory.
        let finished = self.finished
        self.finished = { _ in }
        isCancelled = { true }
        finished(result)
        return false
    }
}
