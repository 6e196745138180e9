// What the speaker played, lined up with what the microphone heard, for the
// echo canceller. Both sides are placed on one timeline of 16 kHz samples, from
// the one clock of the audio thread: a period written to the speaker is heard
// when the frames queued before it have played (snd_pcm_delay), a period read
// from the microphone was heard when it was captured (before what is still
// waiting, snd_pcm_avail). What that leaves (the card's own latency, the air,
// a converter) is measured: while the speaker plays, the microphone's last
// second is cross-correlated with the reference (EchoDelay), and the reference
// is then taken that much later. The delay may move whenever either side is
// placed afresh (a device opened, an underrun or an overrun), so it is measured
// again a second after that, not five; until then the last delay stands. The measurement is handed out (`takeMeasurement`)
// for someone else to compute, so the audio thread never waits for it. Easy to get wrong: the clock's reading jitters
// by a wake-up, so each side runs on from where its last period ended unless it
// is more than two periods off (an underrun, an overrun, a new device), and
// only then jumps; and the reference is taken a few milliseconds early, so the
// canceller's filter still sees the echo after its cause.

/// The speaker's samples aligned with the microphone's, on one timeline of 16 kHz samples.
public struct EchoAlignment: Sendable {
    public static let rate = 16000

    /// The lags searched: the echo may come before the timeline says it was played (a speaker's
    /// latency overstated) or up to 0.8 s after it: a path through buffers ALSA does not count (a
    /// USB card's, a converter's, the test room's FIFOs) can reach half a second, and an echo past
    /// the search is never measured and never cancelled.
    public let lags: ClosedRange<Int>
    /// The reference is taken this much before the measured delay (3 ms).
    public let margin = 48
    /// The measured delay (samples) beyond the timeline's, once measured.
    public private(set) var delay: Int?
    /// Measurements made so far (for the journal and the tests).
    public private(set) var measurements = 0

    /// A side placed afresh (for the journal, `takePlacements`): the speaker's or the microphone's, and
    /// how many samples from where it would have run on (nil: its first period).
    public struct Placement: Sendable, Equatable {
        public let speaker: Bool
        public let by: Int64?
    }
    private var placements: [Placement] = []

    /// What the speaker played: `far[i]` is timeline sample `farStart + i`.
    private var far: [Int16] = []
    private var farStart: Int64 = 0
    /// Where the speaker's next period goes, and the microphone's.
    private var speakerNext: Int64?
    private var microphoneNext: Int64?
    /// The microphone's last `window` samples at least (two at most), for the next measurement, and where they start.
    private var heard: [Int16] = []
    private var heardStart: Int64 = 0
    /// Samples heard with the speaker playing since the last measurement, and whether the next is
    /// due soon (the first, or a side placed afresh since) or after five windows of them; and how
    /// many soon ones found no echo in a row.
    private var playedHeard = 0
    private var soon = true
    private var misses = 0
    /// A weak peak's lag, waiting for the next measurement to agree.
    private var candidate: Int?
    /// A peak this strong is taken at once.
    public static let strongCorrelation = 0.6
    /// How much later than the delay known an echo may be found and the delay still stand (20 ms).
    public static let later = 320
    private let window: Int
    private let keep: Int
    private let slack: Int

    /// `window` samples of the microphone are correlated (one second), after the first `window`
    /// heard while the speaker plays and then every five times that; `slack` is how far a side may be off before it jumps (two periods).
    public init(window: Int = 16000, lags: ClosedRange<Int> = -3200...12800, slack: Int = 640) {
        self.window = window
        self.lags = lags
        self.slack = slack
        keep = window + lags.upperBound - lags.lowerBound + 2 * slack + 8000
    }

    /// The timeline sample at CLOCK_MONOTONIC `ns`: whole seconds and the rest apart, so that no
    /// product overflows at any uptime (ns times the rate passes Int64 after 6.7 days).
    public static func sample(atNanoseconds ns: UInt64) -> Int64 {
        Int64(ns / 1_000_000_000) * Int64(rate) + Int64(ns % 1_000_000_000) * Int64(rate) / 1_000_000_000
    }

    /// Forgets the measured delay and where each side was (a device changed).
    public mutating func reset() {
        self = EchoAlignment(window: window, lags: lags, slack: slack)
    }

    /// The speaker played `samples` (16 kHz mono), the first at timeline sample `start` by the clock.
    public mutating func played(_ samples: [Int16], at start: Int64) {
        guard !samples.isEmpty else { return }
        let expected = speakerNext
        let (at, jumped) = Self.place(&speakerNext, start, slack: slack, count: samples.count)
        // A new answer, or an underrun: the delay may have moved with it.
        if jumped { placedAfresh(speaker: true, by: expected.map { at - $0 }) }
        if far.isEmpty || at < farStart || at > farStart + Int64(far.count) + Int64(keep) {
            far = []
            farStart = at
        }
        let end = Int(at - farStart) + samples.count
        if end > far.count { far.append(contentsOf: repeatElement(0, count: end - far.count)) }
        far.replaceSubrange(Int(at - farStart)..<end, with: samples)
        if far.count > keep {
            let drop = far.count - keep
            far.removeFirst(drop)
            farStart += Int64(drop)
        }
    }

    /// The speaker took back the last `count` samples it was given, unplayed (a steady speaker's
    /// queued silence, when a sound starts): what it plays next goes where they were, no jump.
    public mutating func rewound(_ count: Int) {
        guard count > 0, let next = speakerNext else { return }
        speakerNext = next - Int64(count)
    }

    /// The microphone heard `samples` (16 kHz mono), the first at timeline sample `start` by the
    /// clock; returns what the speaker played that is in them, aligned by the measured delay, as
    /// many samples (silence where it played nothing). A measurement falls due when a second has
    /// been heard over the speaker.
    public mutating func heard(_ samples: [Int16], at start: Int64) -> [Int16] {
        let expected = microphoneNext
        let (at, jumped) = Self.place(&microphoneNext, start, slack: slack, count: samples.count)
        // An overrun, or a device opened again: the delay may have moved with it.
        if jumped { placedAfresh(speaker: false, by: expected.map { at - $0 }) }
        if heard.isEmpty || heardStart + Int64(heard.count) != at { heard = [] ; heardStart = at }
        heard.append(contentsOf: samples)
        // Trimmed to its last window once it holds two: trimming it every period moved the whole
        // window each time, most of what the microphone's plumbing cost while nothing played.
        if heard.count > 2 * window {
            let drop = heard.count - window
            heard.removeFirst(drop)
            heardStart += Int64(drop)
        }
        let reference = self.reference(count: samples.count, at: at - Int64((delay ?? 0) - margin))
        if reference.contains(where: { $0 != 0 }) { playedHeard += samples.count }
        return reference
    }

    /// The sides placed afresh since the last call.
    public mutating func takePlacements() -> [Placement] {
        defer { placements.removeAll() }
        return placements
    }

    /// What the speaker played from timeline sample `at`, `count` of them, silence where nothing.
    public func reference(count: Int, at: Int64) -> [Int16] {
        var out = [Int16](repeating: 0, count: count)
        let from = max(at, farStart), to = min(at + Int64(count), farStart + Int64(far.count))
        guard from < to else { return out }
        for t in from..<to { out[Int(t - at)] = far[Int(t - farStart)] }
        return out
    }

    /// What to correlate, once due (soon after the speaker is first heard, or a side was placed
    /// afresh, then every five seconds): the microphone's last window, or what it has heard since
    /// it was placed afresh if that is less (a microphone opened with the answer):
    /// pass it to `EchoDelay.estimate` and its answer to `measured`.
    public mutating func takeMeasurement() -> EchoDelay.Input? {
        let count = min(heard.count, window)
        guard playedHeard >= due, count >= window / 4 else { return nil }
        playedHeard = 0
        soon = false
        let lead = lags.upperBound
        let start = heardStart + Int64(heard.count - count)
        let span = reference(count: count + lags.upperBound - lags.lowerBound, at: start - Int64(lead))
        return EchoDelay.Input(near: Array(heard.suffix(count)), far: span, farLead: lead, lags: lags)
    }

    /// Heard over the speaker before the next measurement: a quarter of a window when soon, so that
    /// the first words' echo (it comes a few hundred milliseconds after them) is found as soon as it
    /// is heard; half a window, then a whole one, while none is found; five once one was.
    private var due: Int {
        soon ? (window / 4) << min(misses, 2) : 5 * window
    }

    /// The answer to the last `takeMeasurement` (nil: no echo found; the delay stays, and the next
    /// is due soon).
    public mutating func measured(_ estimate: EchoDelay.Estimate?) {
        guard let estimate else {
            soon = true
            misses += 1
            candidate = nil
            return
        }
        // A lag within a millisecond before the last, or up to `later` after it, is the same delay: the
        // canceller is not disturbed. Its filter starts `margin` before the delay and is long, so it holds
        // an echo that came a little later; moved, what it learnt is shifted and learnt again. A
        // reverberant room's peak can be its direct path one time and a reflection a few milliseconds
        // later the next: each such move cost the next answer's first seconds most of their cancelling.
        if let delay, estimate.lag >= delay - 16, estimate.lag <= delay + Self.later {
            candidate = nil
            misses = 0
            measurements += 1
            return
        }
        // With no delay known, a strong peak over a quarter second of echo or more is the echo; a weak one,
        // or one over less (the first words), may be a sidelobe, and is taken once the next measurement
        // finds it too (within 5 ms): an inverted answer's first 60 ms of echo gave −0.89 a pitch period
        // (10 ms) from the lag. A delay known is moved only so, however strong the peak: one measured
        // over a short sound (the awake cue, a tone) may find a lag a period of its tone away.
        let agreed = candidate.map { abs($0 - estimate.lag) <= 80 } ?? false
        let strong = abs(estimate.correlation) >= Self.strongCorrelation && estimate.echoHeard >= window / 4
        guard strong && delay == nil || agreed else {
            candidate = estimate.lag
            soon = true
            return
        }
        candidate = nil
        misses = 0
        measurements += 1
        delay = estimate.lag
    }

    /// A side was placed afresh by `by` samples (nil: its first period): told, and measured again soon.
    private mutating func placedAfresh(speaker: Bool, by: Int64?) {
        placements.append(Placement(speaker: speaker, by: by))
        soon = true
        misses = 0
        playedHeard = 0
    }

    /// Where a side's period of `count` goes: on from the last, unless the clock says it is more than
    /// `slack` off (then it jumped there).
    private static func place(_ next: inout Int64?, _ clock: Int64, slack: Int, count: Int) -> (Int64, jumped: Bool) {
        let at: Int64
        let jumped: Bool
        if let expected = next, abs(expected - clock) <= Int64(slack) { (at, jumped) = (expected, false) } else { (at, jumped) = (clock, true) }
        next = at + Int64(count)
        return (at, jumped)
    }
}
