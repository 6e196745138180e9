// Opening a PCM and choosing its parameters, shared by capture and playback.
// Period and buffer are set explicitly (snd_pcm_set_params picks them from a
// latency and often lands on 4 long periods); the rate must be exact, which the
// `plug` layer of `default` provides by converting, so nothing here disables it.
import CALSA
import Glibc

/// An open, configured PCM handle and the sizes ALSA settled on.
struct ALSAPCM {
    /// The library's own stderr lines, off once per process (see shim.h).
    private static let silenced: Void = parlour_alsa_silence_library_errors()

    let handle: OpaquePointer
    /// The rate opened at: the one asked for, or with `converting` false the card's nearest.
    let rate: Int
    /// Frames per period as ALSA chose it (close to the one asked for).
    let periodFrames: Int
    let bufferFrames: Int

    /// Opens `device` non-blocking (callers wait with snd_pcm_wait, so a stop is noticed
    /// even when no data comes), S16_LE interleaved at exactly `rate` and `channels`; or, with
    /// `converting` false, at the rate nearest `rate` that the card takes without converting,
    /// in periods of `periodFrames` at `rate`'s duration.
    static func open(device: String, stream: snd_pcm_stream_t, rate: Int, channels: Int,
                     periodFrames: Int, periods: Int = 8, converting: Bool = true) throws(ALSAError) -> ALSAPCM {
        _ = silenced
        var opened: OpaquePointer?
        try ALSAError.check(snd_pcm_open(&opened, device, stream, SND_PCM_NONBLOCK), "snd_pcm_open", device)
        guard let handle = opened else { throw ALSAError(function: "snd_pcm_open", code: -ENODEV, device: device) }
        do {
            let (settled, period, buffer) = try configure(handle, device: device, playback: stream == SND_PCM_STREAM_PLAYBACK,
                                                          rate: rate, channels: channels, periodFrames: periodFrames, periods: periods,
                                                          converting: converting)
            return ALSAPCM(handle: handle, rate: settled, periodFrames: period, bufferFrames: buffer)
        } catch {
            snd_pcm_close(handle)
            throw error
        }
    }

    /// What snd_pcm_writei's `result` on `pcm` leaves the writer to do; an error other than these throws.
    enum Written {
        /// Frames were written.
        case frames(Int)
        /// No room: wait for poll.
        case full
        /// Interrupted, or an underrun (or a suspend) recovered: write again.
        case again(underran: Bool)
    }

    static func written(_ result: Int, pcm: OpaquePointer, device: String) throws(ALSAError) -> Written {
        if result > 0 { return .frames(result) }
        let code = Int32(truncatingIfNeeded: result)
        switch -code {
        case 0, EAGAIN:
            return .full
        case EINTR:
            return .again(underran: false)
        case EPIPE, ESTRPIPE:
            try ALSAError.check(snd_pcm_recover(pcm, code, 1), "snd_pcm_recover", device)
            return .again(underran: true)
        default:
            throw ALSAError(function: "snd_pcm_writei", code: code, device: device)
        }
    }

    private static func configure(_ pcm: OpaquePointer, device: String, playback: Bool, rate: Int, channels: Int,
                                  periodFrames: Int, periods: Int, converting: Bool) throws(ALSAError) -> (Int, Int, Int) {
        var hwAllocated: OpaquePointer?
        try ALSAError.check(snd_pcm_hw_params_malloc(&hwAllocated), "snd_pcm_hw_params_malloc", device)
        let hw = hwAllocated!
        defer { snd_pcm_hw_params_free(hw) }
        try ALSAError.check(snd_pcm_hw_params_any(pcm, hw), "snd_pcm_hw_params_any", device)
        try ALSAError.check(snd_pcm_hw_params_set_rate_resample(pcm, hw, converting ? 1 : 0), "snd_pcm_hw_params_set_rate_resample", device)
        try ALSAError.check(snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "snd_pcm_hw_params_set_access", device)
        try ALSAError.check(snd_pcm_hw_params_set_format(pcm, hw, SND_PCM_FORMAT_S16_LE), "snd_pcm_hw_params_set_format", device)
        try ALSAError.check(snd_pcm_hw_params_set_channels(pcm, hw, UInt32(clamping: channels)), "snd_pcm_hw_params_set_channels", device)
        var settled = UInt32(clamping: rate)
        if converting {
            try ALSAError.check(snd_pcm_hw_params_set_rate(pcm, hw, settled, 0), "snd_pcm_hw_params_set_rate", device)
        } else {
            try ALSAError.check(snd_pcm_hw_params_set_rate_near(pcm, hw, &settled, nil), "snd_pcm_hw_params_set_rate_near", device)
        }
        var period = snd_pcm_uframes_t(max(1, periodFrames * Int(settled) / max(rate, 1)))
        try ALSAError.check(snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, nil), "snd_pcm_hw_params_set_period_size_near", device)
        var buffer = period * snd_pcm_uframes_t(periods)
        try ALSAError.check(snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer), "snd_pcm_hw_params_set_buffer_size_near", device)
        try ALSAError.check(snd_pcm_hw_params(pcm, hw), "snd_pcm_hw_params", device)

        var swAllocated: OpaquePointer?
        try ALSAError.check(snd_pcm_sw_params_malloc(&swAllocated), "snd_pcm_sw_params_malloc", device)
        let sw = swAllocated!
        defer { snd_pcm_sw_params_free(sw) }
        try ALSAError.check(snd_pcm_sw_params_current(pcm, sw), "snd_pcm_sw_params_current", device)
        try ALSAError.check(snd_pcm_sw_params_set_avail_min(pcm, sw, period), "snd_pcm_sw_params_set_avail_min", device)
        // Playback starts once the buffer is full, so it does not underrun at once;
        // capture is started explicitly.
        let start = playback ? buffer : 1
        try ALSAError.check(snd_pcm_sw_params_set_start_threshold(pcm, sw, start), "snd_pcm_sw_params_set_start_threshold", device)
        try ALSAError.check(snd_pcm_sw_params(pcm, sw), "snd_pcm_sw_params", device)
        return (Int(settled), Int(period), Int(buffer))
    }
}
