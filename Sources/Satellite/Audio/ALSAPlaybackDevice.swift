// A speaker that plays one PCMAudio at a time, a period per write, so a cancel
// is noticed within one ALSA period. Easy to get wrong: snd_pcm_drain blocks for
// the whole buffer, so the end is awaited a period at a time first and only the
// last period is drained; and an underrun is recovered, not treated as failure.
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

/// One open playback PCM.
///
/// Threads: `open` runs on the caller's thread; after that `play` and `close` must
/// be called from one thread at a time (Playback uses one dedicated thread per reply).
public final class ALSAPlaybackDevice: @unchecked Sendable {
    public let device: String
    public let rate: Int
    public let channels: Int
    public let periodFrames: Int

    private let pcm: OpaquePointer
    private var isClosed = false
    private let underrunCount = Atomic<Int>(0)
    /// When snd_pcm_writei first accepted frames (CLOCK_MONOTONIC ns), for scripts/bench.
    /// Set and read on the thread that plays.
    public private(set) var firstFrameMonotonicNs: UInt64?

    private init(device: String, rate: Int, channels: Int, pcm: ALSAPCM) {
        self.device = device
        self.rate = rate
        self.channels = channels
        self.periodFrames = pcm.periodFrames
        self.pcm = pcm.handle
    }

    deinit { close() }

    /// Opens the device for audio of this rate and channel count, S16_LE interleaved.
    /// Through `plug` (as in `default`) a 24 kHz stereo reply plays on a 16 kHz mono card.
    public static func open(device: String, rate: Int, channels: Int) throws(ALSAError) -> ALSAPlaybackDevice {
        // 20 ms periods, 8 of them: small enough that a cancel is quick.
        let pcm = try ALSAPCM.open(device: device, stream: SND_PCM_STREAM_PLAYBACK, rate: rate,
                                   channels: channels, periodFrames: max(1, rate / 50))
        return ALSAPlaybackDevice(device: device, rate: rate, channels: channels, pcm: pcm)
    }

    /// Underruns recovered so far (the writer fell behind the card).
    public var underruns: Int { underrunCount.load(ordering: .relaxed) }

    /// Plays `audio` and blocks until it has been heard or `isCancelled` says stop,
    /// which is checked every period. The audio must have the rate and channels
    /// the device was opened with.
    public func play(_ audio: PCMAudio, isCancelled: @Sendable () -> Bool) throws(ALSAError) -> PlaybackOutcome {
        precondition(audio.sampleRate == rate && audio.channels == channels,
                     "audio is \(audio.sampleRate) Hz × \(audio.channels), device opened for \(rate) Hz × \(channels)")
        let total = audio.frameCount
        if total == 0 { return PlaybackOutcome(ending: .finished, framesWritten: 0) }
        let timeout = Int32(max(1, periodFrames * 1000 / rate))
        var written = 0
        while written < total {
            if isCancelled() { return stopNow(written) }
            let ready = snd_pcm_wait(pcm, timeout)
            if ready == 0 { continue }
            let function = ready < 0 ? "snd_pcm_wait" : "snd_pcm_writei"
            let count = min(periodFrames, total - written)
            let result: Int = ready < 0 ? Int(ready) : audio.samples.withUnsafeBufferPointer { samples in
                snd_pcm_writei(pcm, samples.baseAddress! + written * channels, snd_pcm_uframes_t(count))
            }
            if result >= 0 {
                if firstFrameMonotonicNs == nil, result > 0 { firstFrameMonotonicNs = MonotonicClock.nanoseconds() }
                written += result
            } else {
                try recover(result, function)
            }
        }
        return try finish(written, timeout: timeout, isCancelled: isCancelled)
    }

    /// Closes the device; playing again is a programming error.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        snd_pcm_close(pcm)
    }

    /// Waits, a period at a time, until about one period is left to play, then drains it.
    private func finish(_ written: Int, timeout: Int32, isCancelled: @Sendable () -> Bool) throws(ALSAError) -> PlaybackOutcome {
        // Audio shorter than the start threshold has not started yet.
        if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED, written > 0 {
            try ALSAError.check(snd_pcm_start(pcm), "snd_pcm_start", device)
        }
        // Wait until only the last period is left. An underrun recovered late in the reply
        // leaves the device prepared with less than its start threshold queued, so it is
        // started again here; and a device whose queue stops shrinking is given up on
        // after 25 periods rather than leaving the satellite speaking for ever.
        var stalled = 0
        var lastDelay = snd_pcm_sframes_t.max
        while !isCancelled(), stalled < 25 {
            if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED { _ = snd_pcm_start(pcm) }
            // An underrun means everything queued has been played. Behind `plug` converting 22.05 kHz
            // (espeak-ng's rate, and `say`'s) snd_pcm_delay still succeeds then, with a delay that
            // never falls, so the state is checked rather than waiting out the stall.
            if snd_pcm_state(pcm) == SND_PCM_STATE_XRUN { break }
            var delay: snd_pcm_sframes_t = 0
            // An error here is an underrun: everything queued has been played.
            guard snd_pcm_delay(pcm, &delay) == 0, delay > periodFrames else { break }
            stalled = delay < lastDelay ? 0 : stalled + 1
            lastDelay = delay
            usleep(UInt32(timeout) * 1000)
        }
        if isCancelled() { return stopNow(written) }
        // The last period drains without blocking, watched a period at a time and given
        // up after a bounded wait: a blocking drain once never returned, which would
        // leave the satellite speaking for ever.
        var drained = snd_pcm_drain(pcm)
        var waits = 0
        while drained == -EAGAIN, snd_pcm_state(pcm) == SND_PCM_STATE_DRAINING, waits < 25, !isCancelled() {
            usleep(UInt32(timeout) * 1000)
            waits += 1
            drained = snd_pcm_state(pcm) == SND_PCM_STATE_DRAINING ? -EAGAIN : 0
        }
        if isCancelled() { return stopNow(written) }
        if snd_pcm_state(pcm) == SND_PCM_STATE_DRAINING { snd_pcm_drop(pcm) }
        if drained < 0, drained != -EPIPE, drained != -EAGAIN {
            throw ALSAError(function: "snd_pcm_drain", code: drained, device: device)
        }
        return PlaybackOutcome(ending: .finished, framesWritten: written)
    }

    private func stopNow(_ written: Int) -> PlaybackOutcome {
        snd_pcm_drop(pcm)
        return PlaybackOutcome(ending: .cancelled, framesWritten: written)
    }

    private func recover(_ result: Int, _ function: String) throws(ALSAError) {
        let code = Int32(truncatingIfNeeded: result)
        switch -code {
        case EAGAIN, EINTR:
            return
        case EPIPE, ESTRPIPE:
            underrunCount.add(1, ordering: .relaxed)
            try ALSAError.check(snd_pcm_recover(pcm, code, 1), "snd_pcm_recover", device)
        default:
            throw ALSAError(function: function, code: code, device: device)
        }
    }
}
