// The speaker while the echo is cancelled: one playback device opened once, at
// one rate (the card's own near 48 kHz, so nothing converts behind it) and mono,
// kept full (silence between sounds), so the echo's path (the card, a
// converter, the room) stays what the canceller measured, from one answer to the
// next: a device opened afresh for each answer would start its path afresh, and
// each answer's first second would run on the last one's delay. Each reply or
// cue is played into it in turn, brought to its rate and to mono here
// (speexdsp's resampler). Driven by the audio thread (AudioEngine), which alone
// touches it after `open`. Easy to get wrong: what is queued of a sound
// cancelled is taken back (rewound) and silence written in its place, so it
// stops at once and the card plays on (a device that cannot rewind drops and
// starts again: the speaker is placed afresh on the echo's timeline, as after an
// underrun, and the delay measured again); an underrun is recovered, never a
// failure; a sound's end is awaited until the card has played it, not until
// it was written; and a speaker no longer wanted (the canceller switched off
// as the microphone opened on another card) is let go only once no sound is
// reserved for it, or a cue given it at that moment failed as if the speaker had.
import CALSA
import CSpeexDSP
import Glibc
import SatelliteCore
import Synchronization

/// The one playback device kept open while the echo is cancelled.
final class SteadySpeaker: AudioEngineSide, SpeakerOutput, @unchecked Sendable {
    /// The rate asked for: a card's usual one; the card's nearest is taken, unconverted.
    static let preferredRate = 48000
    let device: String
    let rate: Int
    let channels = 1
    let periodFrames: Int
    let bufferFrames: Int

    private let pcm: OpaquePointer
    private let engine: AudioEngine
    /// Whether it is open, and sounds reserved (`reserve`) but not yet started: while one is, it is not
    /// let go for being unwanted, so a sound given it as the canceller switched off still plays.
    private let life = Mutex<(open: Bool, pending: Int)>((true, 0))
    private let underrunCount = Atomic<Int>(0)

    /// The audio thread's: the sound playing, what is waiting to be written (converted), frames
    /// written since the device opened, and who is told when it is lost.
    private var sound: Sound?
    private var pending: [Int16] = []
    private var pendingIsSound = false
    private var written: Int64 = 0
    private var closing = false
    /// While only silence plays: when to top it up (CLOCK_MONOTONIC ns).
    private var topUp: UInt64 = 0
    private var lost: @Sendable (ALSAError) -> Void = { _ in }

    private init(device: String, pcm: ALSAPCM, engine: AudioEngine) {
        self.device = device
        self.rate = pcm.rate
        self.periodFrames = pcm.periodFrames
        self.bufferFrames = pcm.bufferFrames
        self.pcm = pcm.handle
        self.engine = engine
    }

    /// Opens `device` (on the audio thread: `engine.run`), 20 ms periods, 8 of them, as a reply's own.
    static func open(device: String, engine: AudioEngine) throws(ALSAError) -> SteadySpeaker {
        let pcm = try ALSAPCM.open(device: device, stream: SND_PCM_STREAM_PLAYBACK, rate: preferredRate, channels: 1,
                                   periodFrames: preferredRate / 50, converting: false)
        return SteadySpeaker(device: device, pcm: pcm, engine: engine)
    }

    /// Whether it is still open (not lost, not closed).
    var isOpen: Bool { life.withLock { $0.open } }

    /// Holds it open for one `start`, which must follow; false when it is closed already.
    func reserve() -> Bool {
        life.withLock { life in
            guard life.open else { return false }
            life.pending += 1
            return true
        }
    }

    /// Underruns recovered so far.
    var underruns: Int { underrunCount.load(ordering: .relaxed) }

    /// Starts writing silence; `lost` is told, on the audio thread, if the device fails.
    func start(lost: @escaping @Sendable (ALSAError) -> Void) {
        self.lost = lost
        engine.attach(self)
    }

    /// Closes it once what plays has been let go (cancelled).
    func close() {
        engine.perform { [self] in closing = true }
    }

    /// Plays `audio` (any rate and layout) after the silence queued; `finished` is told on the audio
    /// thread once the card has played it, or it was cancelled (`isCancelled` said so) or failed, and
    /// `firstFrame` when its first frame was written and when that will be heard (CLOCK_MONOTONIC ns).
    /// One sound at a time: the last must have finished; `reserve()` first.
    func start(_ audio: PCMAudio, isCancelled: @escaping @Sendable () -> Bool,
               firstFrame: @escaping @Sendable (_ written: UInt64, _ heard: UInt64) -> Void,
               finished: @escaping @Sendable (Result<PlaybackOutcome, ALSAError>) -> Void) {
        engine.perform { [self] in
            life.withLock { $0.pending -= 1 }
            guard isOpen else {
                return finished(.failure(ALSAError(function: "snd_pcm_writei", code: -EBADFD, device: device)))
            }
            precondition(sound == nil, "the steady speaker plays one sound at a time")
            sound = Sound(audio, rate: rate, isCancelled: isCancelled, firstFrame: firstFrame, finished: finished)
            // Silence converted but not written yet gives way at once, and what is queued is taken back
            // but a period, so the sound starts now, not after the silence.
            if !pendingIsSound { pending = [] }
            takeBack(keeping: Int64(periodFrames))
        }
    }

    // MARK: On the audio thread

    var handle: OpaquePointer { pcm }
    // While only silence plays it is topped up on a timer, half a buffer at a time, rather than each
    // period the card asks for one: a quarter of the wake-ups while idle.
    var polls: Bool { sound != nil }
    var deadline: UInt64? { sound == nil ? topUp : nil }

    func begin() -> Bool {
        engine.owner.assertCurrent()
        engine.speakerOpened(self, pcm: pcm)
        do throws(ALSAError) {
            try fill()
        } catch {
            return end(error)
        }
        return true
    }

    func service(revents: UInt16, now: UInt64) -> Bool {
        engine.owner.assertCurrent()
        if let sound, sound.isCancelled() { stopSound() }
        // Idle and no longer wanted (closed, or the canceller switched off): let go.
        if sound == nil, closing || !engine.cancelsEcho, letGo() { return end(nil) }
        do throws(ALSAError) {
            try fill()
        } catch {
            return end(error)
        }
        if sound == nil { topUp = now + UInt64(bufferFrames / 2) * 1_000_000_000 / UInt64(rate) }
        if let sound, let end = sound.endsAt, played >= end {
            self.sound = nil
            sound.finish(.success(PlaybackOutcome(ending: .finished, framesWritten: sound.frameCount)))
            // Closed in this wake-up, before the one that opens the speaker for the next sound.
            if closing || !engine.cancelsEcho, letGo() { return self.end(nil) }
        }
        return true
    }

    /// Frames the card has played since the device opened (all written, once it underran).
    private var played: Int64 {
        var delay: snd_pcm_sframes_t = 0
        guard snd_pcm_state(pcm) == SND_PCM_STATE_RUNNING, snd_pcm_delay(pcm, &delay) == 0 else { return written }
        return written - Int64(max(0, delay))
    }

    /// Writes while the device has room: the sound's next frames, or silence.
    private func fill() throws(ALSAError) {
        while true {
            if pending.isEmpty {
                if let sound, sound.endsAt == nil {
                    pending = sound.next(periodFrames)
                    pendingIsSound = true
                    if pending.isEmpty { sound.endsAt = written }
                }
                if pending.isEmpty {
                    pending = [Int16](repeating: 0, count: periodFrames)
                    pendingIsSound = false
                }
            }
            let result: Int = pending.withUnsafeBufferPointer { samples in
                let result = snd_pcm_writei(pcm, samples.baseAddress!, snd_pcm_uframes_t(samples.count))
                if result > 0 { engine.speakerWrote(UnsafeBufferPointer(rebasing: samples[0..<result]), frames: result, by: self, pcm: pcm) }
                return result
            }
            switch try ALSAPCM.written(result, pcm: pcm, device: device) {
            case .frames(let count):
                if pendingIsSound, let sound, !sound.started {
                    // Heard once what was queued before it has played.
                    var delay: snd_pcm_sframes_t = 0
                    if snd_pcm_delay(pcm, &delay) != 0 { delay = snd_pcm_sframes_t(count) }
                    let now = MonotonicClock.nanoseconds()
                    sound.started = true
                    sound.firstFrame(now, now + UInt64(max(0, Int(delay) - count)) * 1_000_000_000 / UInt64(rate))
                }
                written += Int64(count)
                pending.removeFirst(count)
            case .full:
                // A device prepared again (an underrun, a sound dropped) starts once full; full it is.
                if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED {
                    try ALSAError.check(snd_pcm_start(pcm), "snd_pcm_start", device)
                }
                return
            case .again(let underran):
                // An underrun (a loaded machine): the card played everything and stopped. It starts again
                // once filled; the echo's timeline sees the jump, and the delay is measured again.
                if underran { underrunCount.add(1, ordering: .relaxed) }
            }
        }
    }

    /// The sound playing was cancelled: what is queued is taken back and silence written in its place
    /// (a device that cannot take back drops it and starts again), so it stops now. Taken back, the
    /// card plays on without a break; dropped, it starts afresh, and a converter or a card's own
    /// buffer (ALSA's file plugin, the test room's) may keep what was dropped.
    private func stopSound() {
        guard let sound else { return }
        self.sound = nil
        if sound.started, played < sound.endsAt ?? .max, !takeBack(keeping: 0) {
            snd_pcm_drop(pcm)
            snd_pcm_prepare(pcm)
            written = played
        }
        if pendingIsSound { pending = [] }
        sound.finish(.success(PlaybackOutcome(ending: .cancelled, framesWritten: sound.framesTaken)))
    }

    /// Takes back what is queued but `keeping` frames, and tells the echo's timeline; false when the
    /// device took back less than all but a period of what was asked.
    @discardableResult
    private func takeBack(keeping: Int64) -> Bool {
        let wanted = written - played - keeping
        guard wanted > 0 else { return true }
        let back = snd_pcm_rewind(pcm, snd_pcm_uframes_t(min(wanted, Int64(max(0, snd_pcm_rewindable(pcm))))))
        if back > 0 {
            written -= Int64(back)
            engine.speakerRewound(Int(back), by: self)
        }
        return back >= 0 && Int64(back) >= wanted - Int64(periodFrames)
    }

    /// Marks it closed unless a sound is reserved for it; whether it was.
    private func letGo() -> Bool {
        life.withLock { life in
            guard life.pending == 0 else { return false }
            life.open = false
            return true
        }
    }

    /// Closes the device (`error`: it failed); false, for the engine to let go.
    private func end(_ error: ALSAError?) -> Bool {
        snd_pcm_close(pcm)
        life.withLock { $0.open = false }
        let sound = self.sound
        self.sound = nil
        pending = []
        if let error {
            sound?.finish(.failure(error))
            lost(error)
        } else {
            sound?.finish(.success(PlaybackOutcome(ending: .cancelled, framesWritten: sound?.framesTaken ?? 0)))
        }
        lost = { _ in }
        return false
    }

    /// One reply or cue: mono, brought to the device's rate a period at a time. The audio thread's.
    private final class Sound {
        let isCancelled: @Sendable () -> Bool
        private var finished: @Sendable (Result<PlaybackOutcome, ALSAError>) -> Void
        /// Frames of the audio as given.
        let frameCount: Int
        private let sourceRate: Int
        private var mono: [Int16]
        private var taken = 0
        private var resampler: OpaquePointer?
        /// Where its last frame ends among the device's frames, once all is written.
        var endsAt: Int64?
        /// Whether its first frame was written; who is told when, and when it will be heard.
        var started = false
        let firstFrame: @Sendable (_ written: UInt64, _ heard: UInt64) -> Void

        init(_ audio: PCMAudio, rate: Int, isCancelled: @escaping @Sendable () -> Bool,
             firstFrame: @escaping @Sendable (UInt64, UInt64) -> Void,
             finished: @escaping @Sendable (Result<PlaybackOutcome, ALSAError>) -> Void) {
            self.isCancelled = isCancelled
            self.firstFrame = firstFrame
            self.finished = finished
            frameCount = audio.frameCount
            sourceRate = audio.sampleRate
            mono = Self.mono(audio)
            if audio.sampleRate != rate, audio.sampleRate > 0 {
                var error: Int32 = 0
                resampler = speex_resampler_init(1, spx_uint32_t(audio.sampleRate), spx_uint32_t(rate), SPEEX_RESAMPLER_QUALITY_DEFAULT, &error)
                // The converter holds back its input latency: silence after the end lets it out.
                if let resampler { mono += repeatElement(0, count: Int(speex_resampler_get_input_latency(resampler))) }
            }
        }

        deinit { if let resampler { speex_resampler_destroy(resampler) } }

        /// Up to `count` frames at the device's rate; none once all has been given.
        func next(_ count: Int) -> [Int16] {
            guard taken < mono.count else { return [] }
            guard let resampler else {
                defer { taken = min(mono.count, taken + count) }
                return Array(mono[taken..<min(mono.count, taken + count)])
            }
            var out = [Int16](repeating: 0, count: count)
            var inLength = spx_uint32_t(mono.count - taken), outLength = spx_uint32_t(count)
            mono.withUnsafeBufferPointer { input in
                out.withUnsafeMutableBufferPointer { output in
                    _ = speex_resampler_process_int(resampler, 0, input.baseAddress! + taken, &inLength, output.baseAddress, &outLength)
                }
            }
            taken += Int(inLength)
            return Array(out[0..<Int(outLength)])
        }

        /// Frames of the audio as given that were handed on.
        var framesTaken: Int { min(frameCount, taken) }

        /// Tells its end, once.
        func finish(_ result: Result<PlaybackOutcome, ALSAError>) {
            let finished = self.finished
            self.finished = { _ in }
            finished(result)
        }

        private static func mono(_ audio: PCMAudio) -> [Int16] {
            guard audio.channels > 1 else { return audio.samples }
            let channels = audio.channels
            return (0..<audio.frameCount).map { frame in
                var sum = 0
                for channel in 0..<channels { sum += Int(audio.samples[frame * channels + channel]) }
                return Int16(clamping: sum / channels)
            }
        }
    }
}
