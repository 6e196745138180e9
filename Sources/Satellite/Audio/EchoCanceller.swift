// Echo cancelling, noise suppression and automatic gain on the microphone's
// audio, with what the speaker played as the echo's reference: WebRTC's audio
// processing (Debian's libwebrtc-audio-processing 0.3, through the C shim
// CWebRTCAudio), the same PipeWire's echo-cancel module uses.
// Chosen by measurement over speexdsp's canceller (speex_echo_* with
// speex_preprocess_* for its residual echo and noise): the same 11.8 s of
// espeak-ng speech played into a room of sox `reverb 40 50 60`, 12 dB quieter
// and 40 ms late, ERLE after the first 2 s:
//   WebRTC AEC alone 28.4 dB, with noise suppression 37.6 dB; 0.5–0.6 % of a core
//   speexdsp, 200 ms filter, alone 19.2 dB, with the preprocessor 27.0 dB; 0.4–0.5 %
//   (300 ms: 28.8 dB with the preprocessor, 0.6 %)
// (Tests/Fixtures, by hand with -O2 on this machine; the daemon's own figures are in BENCHMARKS.md.)
// speexdsp stays for its resampler: a reply at 22.05 or 24 kHz is brought to
// the canceller's 16 kHz. What it does not do: two cards on two clocks drift
// apart, and WebRTC's canceller loses the echo; it is switched off then, with a
// journal line, rather than corrected.
// Everything here runs on the audio thread (AudioEngine), which alone owns it.
import CALSA
import CSpeexDSP
import CWebRTCAudio
import SatelliteCore
import Synchronization

/// Which processing the microphone's audio gets (`audio.echoCancel`, `audio.noiseSuppression`, `audio.autoGain`).
public struct AudioProcessing: Sendable, Equatable {
    public var echoCancel: Bool
    public var noiseSuppression: Bool
    public var autoGain: Bool

    public init(echoCancel: Bool, noiseSuppression: Bool, autoGain: Bool) {
        self.echoCancel = echoCancel
        self.noiseSuppression = noiseSuppression
        self.autoGain = autoGain
    }

    public static let off = AudioProcessing(echoCancel: false, noiseSuppression: false, autoGain: false)
    public var isOff: Bool { self == .off }
}

/// The microphone's processing, fed with what the speaker played. The audio thread's alone.
final class EchoCanceller {
    /// WebRTC works on 10 ms at 16 kHz.
    static let block = 160

    let settings: AudioProcessing
    private var apm: OpaquePointer
    private var alignment = EchoAlignment()
    private let notice: @Sendable (String, [String: String]) -> Void
    /// The speaker's audio at 16 kHz mono, for the playback device `speaker` of rate `resampledRate`.
    private var resampler: OpaquePointer?
    private var resampledRate = 0
    private weak var speaker: ALSAPlaybackDevice?
    /// The devices the delay was measured for; another one measures it again.
    private var speakerName: String?
    private var microphoneName: String?
    /// Cards of the two sides (-1 for a plugin with none), and why the echo is not cancelled now.
    private var speakerCard: Int32 = -1
    private var microphoneCard: Int32 = -1
    private var offBecause: String?
    /// Blocks of 160 waiting for their turn, and processed samples waiting for their chunk.
    private var pendingNear: [Int16] = []
    private var pendingFar: [Int16] = []
    private var processed: [Int16] = []
    private var lastDelay: Int?
    /// A delay being measured off the audio thread, and its answer once there.
    private let measuring = Measuring()

    private final class Measuring: Sendable {
        let state = Mutex<(running: Bool, answer: EchoDelay.Estimate??)>((false, nil))
    }

    /// nil when everything is off (nothing is allocated, nothing runs) or the library failed.
    init?(_ settings: AudioProcessing, notice: @escaping @Sendable (String, [String: String]) -> Void) {
        guard let apm = Self.create(settings) else { return nil }
        self.settings = settings
        self.apm = apm
        self.notice = notice
    }

    private static func create(_ settings: AudioProcessing) -> OpaquePointer? {
        settings.isOff ? nil : parlour_apm_create(settings.echoCancel ? 1 : 0, settings.noiseSuppression ? 1 : 0, settings.autoGain ? 1 : 0)
    }

    deinit {
        parlour_apm_destroy(apm)
        if let resampler { speex_resampler_destroy(resampler) }
    }

    /// Whether the speaker's audio is wanted now.
    var wantsReference: Bool { settings.echoCancel && offBecause == nil }

    /// The speaker `device` opened on `pcm` (its card is compared with the microphone's).
    func speakerOpened(_ device: ALSAPlaybackDevice, pcm: OpaquePointer) {
        if speakerName != device.device { alignment.reset() }
        speakerName = device.device
        speakerCard = Self.card(of: pcm)
        checkCards()
    }

    /// The microphone `device` opened on `pcm`: a new stream, which nothing of the last one may
    /// reach (the filters' tails, the blocks left over), so the processor starts afresh.
    func microphoneOpened(_ device: String, pcm: OpaquePointer) {
        if let fresh = Self.create(settings) {
            parlour_apm_destroy(apm)
            apm = fresh
        }
        // A fresh canceller adds comfort noise (about -80 dBFS) for its first 400 ms, until it has
        // learnt the room's floor; half a second of silence first (about 2 ms of work) keeps it out
        // of the first words and of a meter's first reading.
        var silence = [Int16](repeating: 0, count: Self.block)
        for _ in 0..<50 {
            silence.withUnsafeMutableBufferPointer { block in
                _ = parlour_apm_far(apm, block.baseAddress!)
                block.update(repeating: 0)
                _ = parlour_apm_near(apm, block.baseAddress!, 0)
            }
        }
        pendingNear = []
        pendingFar = []
        processed = []
        if microphoneName != device { alignment.reset() }
        microphoneName = device
        microphoneCard = Self.card(of: pcm)
        checkCards()
    }

    /// `device` (opened on `pcm`) accepted `frames` frames of `samples` (interleaved) at `now`.
    func played(_ samples: UnsafeBufferPointer<Int16>, frames: Int, by device: ALSAPlaybackDevice, pcm: OpaquePointer, now: UInt64) {
        guard wantsReference, frames > 0 else { return }
        var delay: snd_pcm_sframes_t = 0
        if snd_pcm_delay(pcm, &delay) < 0 { delay = snd_pcm_sframes_t(frames) }
        let mono = Self.mono(samples, frames: frames, channels: device.channels)
        let reference = device.rate == EchoAlignment.rate ? mono : resample(mono, from: device)
        // The first frame written plays once what was queued before it has.
        let ahead = (Int64(delay) - Int64(frames)) * Int64(EchoAlignment.rate) / Int64(device.rate)
        alignment.played(reference, at: EchoAlignment.sample(atNanoseconds: now) + ahead)
    }

    /// Processes one chunk the microphone (opened on `pcm`, 16 kHz mono) read at `now`, in place.
    func heard(_ chunk: inout [Int16], pcm: OpaquePointer, now: UInt64) {
        let count = chunk.count
        let waiting = Int64(max(0, Int(snd_pcm_avail_update(pcm))))
        // The chunk's first sample was heard before it and what is still waiting to be read.
        let start = EchoAlignment.sample(atNanoseconds: now) - waiting - Int64(count)
        if let answer = measuring.state.withLock({ m in defer { m.answer = nil }; return m.answer }) { alignment.measured(answer) }
        let far = wantsReference ? alignment.heard(chunk, at: start) : [Int16](repeating: 0, count: count)
        if let input = alignment.takeMeasurement(), measuring.state.withLock({ m in defer { m.running = true }; return !m.running }) {
            // About 10 ms of a core: not on the audio thread, which has a period to keep.
            Task.detached(priority: .utility) { [measuring] in
                let estimate = EchoDelay.estimate(input)
                measuring.state.withLock { $0 = (false, .some(estimate)) }
            }
        }
        if alignment.delay != lastDelay, let delay = alignment.delay {
            lastDelay = delay
            notice("Echo delay measured.", ["delay_ms": String(delay * 1000 / EchoAlignment.rate),
                                            "speaker": speakerName ?? "", "microphone": microphoneName ?? ""])
        }
        pendingNear += chunk
        pendingFar += far
        var at = 0
        while pendingNear.count - at >= Self.block {
            var near = Array(pendingNear[at..<at + Self.block])
            if settings.echoCancel { pendingFar.withUnsafeBufferPointer { _ = parlour_apm_far(apm, $0.baseAddress! + at) } }
            // Digital silence stays silence: a fresh canceller adds comfort noise (about -80 dBFS for
            // its first 400 ms), and a dead microphone must still read as one (doctor, meter).
            let silent = !near.contains { $0 != 0 }
            _ = near.withUnsafeMutableBufferPointer { parlour_apm_near(apm, $0.baseAddress!, 0) }
            processed += silent ? [Int16](repeating: 0, count: Self.block) : near
            at += Self.block
        }
        pendingNear.removeFirst(at)
        pendingFar.removeFirst(at)
        // A chunk not a multiple of 10 ms is late by what was left over, once.
        if processed.count < count { processed.insert(contentsOf: repeatElement(0, count: count - processed.count), at: 0) }
        chunk.replaceSubrange(0..<count, with: processed[0..<count])
        processed.removeFirst(count)
    }

    /// Two cards run on two clocks that drift apart: the echo is not cancelled then.
    private func checkCards() {
        let why: String? = speakerCard >= 0 && microphoneCard >= 0 && speakerCard != microphoneCard
            ? "The speaker (card \(speakerCard)) and the microphone (card \(microphoneCard)) are on different cards, whose clocks drift apart; echo cancelling is off."
            : nil
        if why != offBecause, let why {
            notice(why, ["speaker": speakerName ?? "", "microphone": microphoneName ?? ""])
        }
        offBecause = why
    }

    private func resample(_ mono: [Int16], from device: ALSAPlaybackDevice) -> [Int16] {
        if resampler == nil || speaker !== device || resampledRate != device.rate {
            if let resampler { speex_resampler_destroy(resampler) }
            var error: Int32 = 0
            resampler = speex_resampler_init(1, spx_uint32_t(device.rate), spx_uint32_t(EchoAlignment.rate), 3, &error)
            speaker = device
            resampledRate = device.rate
        }
        guard let resampler else { return [] }
        var out = [Int16](repeating: 0, count: mono.count * EchoAlignment.rate / device.rate + 16)
        var inLength = spx_uint32_t(mono.count), outLength = spx_uint32_t(out.count)
        mono.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                _ = speex_resampler_process_int(resampler, 0, input.baseAddress, &inLength, output.baseAddress, &outLength)
            }
        }
        return Array(out[0..<Int(outLength)])
    }

    private static func mono(_ samples: UnsafeBufferPointer<Int16>, frames: Int, channels: Int) -> [Int16] {
        guard channels > 1 else { return Array(samples[0..<frames]) }
        return (0..<frames).map { frame in
            var sum = 0
            for channel in 0..<channels { sum += Int(samples[frame * channels + channel]) }
            return Int16(clamping: sum / channels)
        }
    }

    /// The card a PCM is on, or -1 (a plugin with none, as the test card).
    private static func card(of pcm: OpaquePointer) -> Int32 {
        var info: OpaquePointer?
        guard snd_pcm_info_malloc(&info) == 0, let info else { return -1 }
        defer { snd_pcm_info_free(info) }
        return snd_pcm_info(pcm, info) == 0 ? snd_pcm_info_get_card(info) : -1
    }
}
