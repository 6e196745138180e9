// Echo cancelling, noise suppression and automatic gain on the microphone's
// audio, with what the speaker played as the echo's reference: speexdsp's
// linear canceller (speex_echo_*, a 128 ms filter) first, then WebRTC's audio
// processing (Debian's libwebrtc-audio-processing 0.3, through the C shim
// CWebRTCAudio, as PipeWire's echo-cancel module uses) at low suppression;
// then noise suppression (NoiseSuppressor, this project's own: its header says
// why not WebRTC's), then WebRTC's gain.
// Both, because neither alone hears a talker over a louder echo. WebRTC's
// alone (high suppression) cancels 32 dB on speech, but in double talk its
// suppressor takes the talker down with the echo: the wake word said 6 dB under
// an answer was heard 0 times in 10. speexdsp's filter alone cancels 15 dB
// (128 ms) to 18 dB (256 ms) after 2 s, and suppresses nothing. speexdsp first
// takes the bulk of the echo linearly, so WebRTC's suppressor has little left
// and is run gently. Offline (wakeword-bench --played, the room's delay drawn
// over the 115–353 ms measured live): 39 of 40 at 6 dB, ERLE 29–34 dB. Live
// (scripts/bench): ERLE 29–35 dB, 1.3 to 2.3 % of a core while an answer
// plays; at 6 dB, 80 of 80 in the eight runs made since the test microphone's
// gaps were found (the misses before were the test rig's: BENCHMARKS.md). A
// delay that moves within an answer costs the filters about a second to
// follow. BENCHMARKS.md has the rest.
// Measured and not taken: speexdsp fed what was played unshifted, with a
// filter long enough for every delay (600 ms), so that a delay measured wrong
// cannot misalign it: a long filter converges slowly (8–13 dB after 2 s alone),
// offline 9 of 20 at 6 dB, live 0 of 10; and what moved in the test room was the
// delay itself from one answer to the next, which an unshifted reference
// follows no better. A 256 ms filter: offline 19 of 20, live 1 of 10 and 2 of 4
// (slower to follow a step); 64 ms: live 4 of 10. Moderate suppression: the
// same 6 of 10.
// The cancellers run only while the speaker plays and for EchoTail's tail
// after it: idle, the processing costs about what noise suppression costs
// (offline on 2026-12-06: 0.024 s of CPU a minute for noise suppression alone,
// 0.043 with echo cancelling on and nothing playing, 0.53 with an answer
// playing).
// speexdsp also brings a reply at 22.05 or 24 kHz to the canceller's 16 kHz
// (its resampler). What it does not do: two cards on two clocks drift apart,
// and the cancellers lose the echo; it is switched off then, with a journal
// line, rather than corrected, and what the microphone hears while the speaker
// plays is made silence: nothing would take it out, so no ear and no server
// may hear it (the answer would be taken for the next question).
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

/// The microphone's processing, fed with what the speaker played. The audio thread's alone (or,
/// offline, its one caller's: `process(_:played:)`).
public final class EchoCanceller {
    /// WebRTC works on 10 ms at 16 kHz; speexdsp is given the same blocks.
    static let block = 160
    /// speexdsp's filter (128 ms), from 3 ms before the measured delay: the room's first reflections,
    /// and a delay that grew since it was measured; WebRTC's filter takes the tail.
    public static let filterLength = 2048
    /// WebRTC's suppression after the linear filter: 1 low, 2 moderate, 3 high (0: speexdsp's alone).
    public static let suppression: Int32 = 1

    let settings: AudioProcessing
    /// speexdsp's linear canceller and WebRTC's canceller after it (when echoCancel), then the noise
    /// suppressor and WebRTC's gain (when asked): the cancellers run only while the speaker plays and
    /// a tail after it (`tail`), the rest always.
    private var speex: OpaquePointer?
    private var aec: OpaquePointer?
    private var suppressor: NoiseSuppressor?
    private var cleanup: OpaquePointer?
    private var tail: EchoTail
    private let filterLength: Int
    private let suppression: Int32
    private var alignment = EchoAlignment()
    private let notice: @Sendable (Priority, String, [String: String]) -> Void
    /// The speaker's audio at 16 kHz mono, for the playback device `speaker` of rate `resampledRate`.
    private var resampler: OpaquePointer?
    private var resampledRate = 0
    private weak var speaker: (any SpeakerOutput)?
    /// The devices the delay was measured for; another one measures it again.
    private var speakerName: String?
    private var microphoneName: String?
    /// Cards of the two sides (-1 for a plugin with none), and why the echo is not cancelled now.
    private var speakerCard: Int32 = -1
    private var microphoneCard: Int32 = -1
    private var offBecause: String?
    private let card: (OpaquePointer) -> Int32
    /// Blocks of 160 waiting for their turn, and processed samples waiting for their chunk.
    private var pendingNear: [Int16] = []
    private var pendingFar: [Int16] = []
    private var processed: [Int16] = []
    private var lastDelay: Int?
    /// With cancelling switched off (two cards): the timeline sample until which the microphone
    /// hears the speaker.
    private var speakerHeardUntil: Int64?
    /// A delay being measured off the audio thread, and its answer once there.
    private let measuring = Measuring()

    private final class Measuring: Sendable {
        let state = Mutex<(running: Bool, answer: EchoDelay.Estimate??)>((false, nil))
    }

    /// nil when everything is off (nothing is allocated, nothing runs) or the library failed.
    /// `card` names the sound card a PCM is on (-1 for none: a plugin); ALSA's, but for a test, which
    /// has no kernel sound card to open.
    public init?(_ settings: AudioProcessing, filterLength: Int = EchoCanceller.filterLength, suppression: Int32 = EchoCanceller.suppression,
                 card: @escaping (OpaquePointer) -> Int32 = EchoCanceller.card(of:),
                 notice: @escaping @Sendable (Priority, String, [String: String]) -> Void) {
        guard !settings.isOff else { return nil }
        self.settings = settings
        self.card = card
        self.filterLength = filterLength
        self.suppression = suppression
        tail = EchoTail(length: filterLength + EchoAlignment.rate / 2)
        self.notice = notice
        guard start() else { return nil }
        warmUp()
    }

    /// Everything afresh, for another device: what the filters learnt was another room's.
    private func start() -> Bool {
        stop()
        if settings.echoCancel {
            speex = speex_echo_state_init(Int32(Self.block), Int32(filterLength))
            var rate: Int32 = Int32(EchoAlignment.rate)
            if let speex { speex_echo_ctl(speex, SPEEX_ECHO_SET_SAMPLING_RATE, &rate) }
            aec = suppression > 0 ? parlour_apm_create(suppression, 0) : nil
        }
        suppressor = settings.noiseSuppression ? NoiseSuppressor() : nil
        if settings.autoGain { cleanup = parlour_apm_create(0, 1) }
        tail = EchoTail(length: tail.length)
        let failed = settings.echoCancel && (speex == nil || suppression > 0 && aec == nil) || settings.autoGain && cleanup == nil
        if failed { stop() }
        return !failed
    }

    private func stop() {
        if let speex { speex_echo_state_destroy(speex) }
        parlour_apm_destroy(aec)
        parlour_apm_destroy(cleanup)
        (speex, aec, suppressor, cleanup) = (nil, nil, nil, nil)
    }

    deinit {
        stop()
        if let resampler { speex_resampler_destroy(resampler) }
    }

    /// Whether the speaker's audio is wanted now.
    var wantsReference: Bool { settings.echoCancel && offBecause == nil }

    /// The speaker `device` opened on `pcm` (its card is compared with the microphone's).
    func speakerOpened(_ device: any SpeakerOutput, pcm: OpaquePointer) {
        if speakerName != device.device { alignment.reset() }
        speakerName = device.device
        speakerCard = card(pcm)
        checkCards()
    }

    /// The microphone `device` opened on `pcm`: a new stream, whatever its period. No block of the
    /// last one is left over; but the room has not changed, so the filters and the delay are kept
    /// (a push turn, the ear and the streamed room each open it afresh, and an answer's first words
    /// would otherwise go uncancelled while the filters learnt the room again). Another device
    /// starts afresh.
    func microphoneOpened(_ device: String, pcm: OpaquePointer) {
        if let name = microphoneName, name != device {
            restart()
            alignment.reset()
        }
        (pendingNear, pendingFar, processed) = ([], [], [])
        microphoneName = device
        microphoneCard = card(pcm)
        checkCards()
    }

    /// Fresh processors, warmed up, and no block of the last stream left over.
    private func restart() {
        _ = start()
        warmUp()
        (pendingNear, pendingFar, processed) = ([], [], [])
    }

    /// A fresh WebRTC processor adds comfort noise (about -80 dBFS) for its first 400 ms, until it has
    /// learnt the room's floor; half a second of silence first (about 2 ms of work) keeps it out
    /// of the first words and of a meter's first reading.
    private func warmUp(_ processors: [OpaquePointer?]? = nil) {
        var silence = [Int16](repeating: 0, count: Self.block)
        for _ in 0..<50 {
            silence.withUnsafeMutableBufferPointer { block in
                for apm in processors ?? [aec, cleanup] {
                    guard let apm else { continue }
                    _ = parlour_apm_far(apm, block.baseAddress!)
                    block.update(repeating: 0)
                    _ = parlour_apm_near(apm, block.baseAddress!, 0)
                }
            }
        }
    }

    /// A fresh WebRTC canceller for a sound that starts after the tail ran out (an answer, a cue).
    /// Kept from one answer to the next, it sometimes drifted off a reverberant room's echo seconds
    /// into the next (BENCHMARKS.md, "A room with an echo"); what holds the room is speexdsp's filter
    /// and the measured delay, which are kept, so a fresh one has little left to learn.
    private func freshCanceller() {
        guard let fresh = parlour_apm_create(suppression, 0) else { return }  // the one it has, then
        parlour_apm_destroy(aec)
        aec = fresh
        warmUp([aec])
    }

    /// Whether the speaker's writes are wanted now: as the reference, or, with cancelling switched
    /// off, to know when the microphone hears the speaker.
    var wantsPlayed: Bool { settings.echoCancel }

    /// `device` (opened on `pcm`) accepted `frames` frames of `samples` (interleaved) at `now`.
    func played(_ samples: UnsafeBufferPointer<Int16>, frames: Int, by device: any SpeakerOutput, pcm: OpaquePointer, now: UInt64) {
        guard settings.echoCancel, frames > 0 else { return }
        var delay: snd_pcm_sframes_t = 0
        if snd_pcm_delay(pcm, &delay) < 0 { delay = snd_pcm_sframes_t(frames) }
        guard wantsReference else {
            // Heard until the last frame written has played, and the room's echo of it has died away:
            // with no delay measured, the longest the delay search reckons with (0.8 s) and the filter's
            // reverberation after it. Half a second of tail let a test room's 0.7 s echo through.
            let end = EchoAlignment.sample(atNanoseconds: now) + Int64(delay) * Int64(EchoAlignment.rate) / Int64(device.rate)
            speakerHeardUntil = end + Int64(alignment.lags.upperBound + filterLength)
            return
        }
        let mono = Self.mono(samples, frames: frames, channels: device.channels)
        let reference = device.rate == EchoAlignment.rate ? mono : resample(mono, from: device)
        // The first frame written plays once what was queued before it has.
        let ahead = (Int64(delay) - Int64(frames)) * Int64(EchoAlignment.rate) / Int64(device.rate)
        alignment.played(reference, at: EchoAlignment.sample(atNanoseconds: now) + ahead)
        tellPlacements()
    }

    /// The speaker took back its last `frames` frames (at `rate`) unplayed.
    func rewound(_ frames: Int, rate: Int) {
        guard wantsReference, rate > 0 else { return }
        alignment.rewound(frames * EchoAlignment.rate / rate)
    }

    /// Processes one chunk the microphone (opened on `pcm`, 16 kHz mono) read at `now`, in place.
    func heard(_ chunk: inout [Int16], pcm: OpaquePointer, now: UInt64) {
        let count = chunk.count
        let waiting = Int64(max(0, Int(snd_pcm_avail_update(pcm))))
        // The chunk's first sample was heard before it and what is still waiting to be read.
        let start = EchoAlignment.sample(atNanoseconds: now) - waiting - Int64(count)
        if settings.echoCancel, offBecause != nil, let until = speakerHeardUntil, start < until {
            // Cancelling is switched off but the speaker was asked to be listened over: what the
            // microphone hears while it plays is the speaker, and goes nowhere (not to the ear, not
            // to the server), as with `audio.echoCancel` off.
            chunk.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        }
        if let answer = measuring.state.withLock({ m in defer { m.answer = nil }; return m.answer }) {
            notice(.debug, "Echo delay estimated.", answer.map { ["delay_ms": String($0.lag * 1000 / EchoAlignment.rate),
                                                                   "correlation": String(Double(Int($0.correlation * 100)) / 100)] }
                   ?? ["delay_ms": "none"])
            alignment.measured(answer)
        }
        let reference = wantsReference ? alignment.heard(chunk, at: start) : [Int16](repeating: 0, count: count)
        tellPlacements()
        if let input = alignment.takeMeasurement(), measuring.state.withLock({ m in defer { m.running = true }; return !m.running }) {
            // About 2 ms of a core: not on the audio thread, which has a period to keep, nor on Swift's
            // pool, which has two threads here; on a spare thread (the last measurement's, mostly).
            let started = SpareThreads.shared.run(name: "echo-delay") { [measuring] in
                let estimate = EchoDelay.estimate(input)
                measuring.state.withLock { $0 = (false, .some(estimate)) }
            }
            if !started { measuring.state.withLock { $0.running = false } }
        }
        if alignment.delay != lastDelay, let delay = alignment.delay {
            lastDelay = delay
            notice(.info, "Echo delay measured.", ["delay_ms": String(delay * 1000 / EchoAlignment.rate),
                                            "speaker": speakerName ?? "", "microphone": microphoneName ?? ""])
        }
        process(&chunk, reference: reference)
    }

    /// A side placed afresh moves the echo's path with it, for all the timeline knows: the journal
    /// says so (debug), beside each delay estimated, so a later answer's path can be followed.
    private func tellPlacements() {
        for placement in alignment.takePlacements() {
            var fields = ["side": placement.speaker ? "speaker" : "microphone"]
            if let by = placement.by { fields["moved_ms"] = String(by * 1000 / Int64(EchoAlignment.rate)) }
            notice(.debug, "Echo timeline placed afresh.", fields)
        }
    }

    /// Offline (wakeword-bench, the tests): what the processing makes of `near`, what the microphone heard, given `played`, what
    /// the speaker played at the same time sample for sample (silence where nothing). As live, in
    /// periods of `period` samples, the delay measured as the audio thread has it measured (but at
    /// once, not off the thread) and WebRTC's canceller given the reference it aligns. A fresh
    /// processor first, as another device opened.
    public func process(_ near: [Int16], played: [Int16], period: Int = 320) -> [Int16] {
        restart()
        alignment.reset()
        var out: [Int16] = []
        out.reserveCapacity(near.count)
        for at in stride(from: 0, to: near.count, by: period) {
            var chunk = Array(near[at..<min(at + period, near.count)])
            let speaker = at < played.count ? Array(played[at..<min(at + chunk.count, played.count)]) : []
            if settings.echoCancel { alignment.played(speaker, at: Int64(at)) }
            let reference = settings.echoCancel ? alignment.heard(chunk, at: Int64(at)) : [Int16](repeating: 0, count: chunk.count)
            if let input = alignment.takeMeasurement() { alignment.measured(EchoDelay.estimate(input)) }
            process(&chunk, reference: reference)
            out += chunk
        }
        return out
    }

    /// The delay measured (samples past the timeline), once measured.
    public var measuredDelay: Int? { alignment.delay }

    /// `chunk` processed in place, in blocks of 10 ms, with the speaker's audio beside it.
    private func process(_ chunk: inout [Int16], reference: [Int16]) {
        let count = chunk.count
        pendingNear += chunk
        pendingFar += reference
        var at = 0
        var near = [Int16](repeating: 0, count: Self.block)
        var out = [Int16](repeating: 0, count: Self.block)
        while pendingNear.count - at >= Self.block {
            near.replaceSubrange(0..<Self.block, with: pendingNear[at..<at + Self.block])
            let playing = pendingFar[at..<at + Self.block].contains { $0 != 0 }
            if playing, tail.idle, aec != nil { freshCanceller() }
            if let speex, tail.active(playing: playing, count: Self.block) {
                pendingFar.withUnsafeBufferPointer { far in
                    speex_echo_cancellation(speex, near, far.baseAddress! + at, &out)
                    if let aec { _ = parlour_apm_far(aec, far.baseAddress! + at) }
                }
                if let aec { _ = out.withUnsafeMutableBufferPointer { parlour_apm_near(aec, $0.baseAddress!, 0) } }
                swap(&near, &out)
            }
            // Digital silence stays silence: a fresh canceller adds comfort noise (about -80 dBFS for
            // its first 400 ms), and a dead microphone must still read as one (doctor, meter). Made
            // silence before the suppressor, which gives out what it was given 16 ms later: after it, a
            // block of zeros would blank the 16 ms of sound before them.
            if !pendingNear[at..<at + Self.block].contains(where: { $0 != 0 }) { near.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
            if let suppressor { suppressor.process(&near) }
            if let cleanup { _ = near.withUnsafeMutableBufferPointer { parlour_apm_near(cleanup, $0.baseAddress!, 0) } }
            processed += near
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
            notice(.info, why, ["speaker": speakerName ?? "", "microphone": microphoneName ?? ""])
        }
        offBecause = why
    }

    private func resample(_ mono: [Int16], from device: any SpeakerOutput) -> [Int16] {
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
    /// The card `pcm` is on, as ALSA says; -1 for none.
    public static func card(of pcm: OpaquePointer) -> Int32 {
        var info: OpaquePointer?
        guard snd_pcm_info_malloc(&info) == 0, let info else { return -1 }
        defer { snd_pcm_info_free(info) }
        return snd_pcm_info(pcm, info) == 0 ? snd_pcm_info_get_card(info) : -1
    }
}

