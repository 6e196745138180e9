import Testing
@testable import SatelliteCore

@Suite struct EchoDelayTests {
    /// `far` delayed by `lag` and scaled by `gain`, as `near`, with `far` leading by `lead`.
    private func echo(of far: [Int16], lag: Int, lead: Int, count: Int, gain: Double) -> [Int16] {
        (0..<count).map { i in Int16(clamping: Int(Double(far[i - lag + lead]) * gain)) }
    }

    @Test(arguments: [0, 37, 800, 4001, -120])
    func findsTheLag(lag: Int) {
        let far = Signal.noise(1800, dBFS: -20)
        let lead = 8000
        let near = echo(of: far, lag: lag, lead: lead, count: 16000, gain: 0.2)
        let estimate = EchoDelay.estimate(near: near, far: far, farLead: lead, lags: -3200...8000)
        #expect(estimate?.lag == lag)
        #expect((estimate?.correlation ?? 0) > 0.9)
    }

    @Test(arguments: [12700, 12800, -3200])
    func theEndsOfTheDefaultSearchAreFound(lag: Int) {
        let lags = EchoAlignment().lags
        let far = Signal.noise(3000, dBFS: -20)
        let lead = lags.upperBound
        let near = echo(of: far, lag: lag, lead: lead, count: 16000, gain: 0.3)
        #expect(EchoDelay.estimate(near: near, far: far, farLead: lead, lags: lags)?.lag == lag)
    }

    @Test func saysHowMuchEchoThePeakWasFoundOver() {
        // The speaker silent, then sound for its last 0.3 s: at the lag, 4800 of near's samples have echo in them.
        let lead = 8000, lag = 4000
        let sound = Signal.noise(300, dBFS: -20).map { $0 == 0 ? 1 : $0 }
        let far = [Int16](repeating: 0, count: 16000 + lead - lag - sound.count) + sound + [Int16](repeating: 0, count: lag)
        let near = echo(of: far, lag: lag, lead: lead, count: 16000, gain: 0.3)
        let estimate = EchoDelay.estimate(near: near, far: far, farLead: lead, lags: -3200...8000)
        #expect(estimate?.lag == lag)
        #expect(estimate?.echoHeard == sound.count)
    }

    @Test func findsTheLagUnderATalker() {
        let far = Signal.noise(1800, dBFS: -20)
        let talker = Signal.noise(1000, dBFS: -30, seed: 9)
        let near = zip(echo(of: far, lag: 512, lead: 8000, count: 16000, gain: 0.3), talker).map { Int16(clamping: Int($0) + Int($1)) }
        #expect(EchoDelay.estimate(near: near, far: far, farLead: 8000, lags: -3200...8000)?.lag == 512)
    }

    @Test func theCoarseSearchPicksTheLagThePlainCorrelationPicks() {
        // Eight at a time in Float against one at a time in Double, on a talker over an echo and on
        // lengths that are not a multiple of eight.
        for (seed, count) in [(UInt64(2), 4000), (3, 3997), (4, 1001)] {
            let far = Signal.noise((count + 1000) / 16 + 1, dBFS: -20, seed: seed)
            let talker = Signal.noise(count / 16 + 1, dBFS: -26, seed: seed + 10)
            let near = zip(echo(of: far, lag: 211, lead: 700, count: count, gain: 0.3), talker).map { Int16(clamping: Int($0) + Int($1)) }
            let lags = -200...700
            let plain = lags.max { a, b in
                (EchoDelay.correlation(near, far, offset: 700 - a) ?? 0) < (EchoDelay.correlation(near, far, offset: 700 - b) ?? 0)
            }
            let coarse = EchoDelay.bestCoarseLag(near: near.map(Float.init), far: far.map(Float.init), farLead: 700, lags: lags)
            #expect(coarse == 211)
            #expect(coarse == plain)
        }
    }

    @Test(arguments: [0, 800, 4001])
    func findsTheLagOfAnInvertedEcho(lag: Int) {
        // Speech-like: noise through a resonance, so the inverted echo's positive sidelobes are strong.
        var far = Signal.noise(1800, dBFS: -20)
        for i in 2..<far.count { far[i] = Int16(clamping: Int(Double(far[i]) + 1.6 * Double(far[i - 1]) - 0.8 * Double(far[i - 2])) / 4) }
        let near = echo(of: far, lag: lag, lead: 8000, count: 16000, gain: -0.3)
        let estimate = EchoDelay.estimate(near: near, far: far, farLead: 8000, lags: -3200...8000)
        #expect(estimate?.lag == lag)
        #expect((estimate?.correlation ?? 0) < -0.9)
    }

    @Test func noEchoIsNoEstimate() {
        let far = Signal.noise(1800, dBFS: -20)
        let near = Signal.noise(1000, dBFS: -20, seed: 5)
        #expect(EchoDelay.estimate(near: near, far: far, farLead: 8000, lags: -3200...8000) == nil)
        #expect(EchoDelay.estimate(near: Signal.silence(1000), far: far, farLead: 8000, lags: -3200...8000) == nil)
    }
}

@Suite struct EchoAlignmentTests {
    /// A speaker playing `far` in 20 ms periods from timeline sample `start`, and a microphone hearing
    /// it `lag` samples later (scaled), each clock reading off by up to `jitter`; the references the
    /// alignment gave for each microphone period, in order.
    private func run(_ alignment: inout EchoAlignment, far: [Int16], start: Int64, lag: Int, jitter: Int) -> [Int16] {
        var generator = SeededGenerator(seed: 3)
        var references: [Int16] = []
        let period = 320
        // The speaker writes a period ahead of the microphone, as a real one does; the first reading of
        // each clock is exact, so the two sides start together.
        for p in 0...(far.count / period) {
            let offset = { p < 2 ? Int64(0) : Int64(Int.random(in: -jitter...jitter, using: &generator)) }
            if p < far.count / period {
                alignment.played(Array(far[p * period..<(p + 1) * period]), at: start + Int64(p * period) + offset())
            }
            guard p > 0 else { continue }
            let heard = p - 1
            let mic: [Int16] = (0..<period).map { k in
                let source = heard * period + k - lag
                return source >= 0 && source < far.count ? far[source] / 4 : 0
            }
            references += alignment.heard(mic, at: start + Int64(heard * period) + offset())
            if let input = alignment.takeMeasurement() { alignment.measured(EchoDelay.estimate(input)) }
        }
        return references
    }

    /// 720 samples, and 650 ms: a path the test room's FIFOs made, past the 0.5 s once searched.
    @Test(arguments: [(lag: 720, seconds: 3), (lag: 10400, seconds: 4)])
    func measuresTheDelayAndAlignsTheReference(lag: Int, seconds: Int) {
        var alignment = EchoAlignment()
        let far = Signal.noise(seconds * 1000, dBFS: -20)
        let references = run(&alignment, far: far, start: 1_000_000, lag: lag, jitter: 150)
        #expect(alignment.delay == lag)
        // Once measured, the reference is the speaker's sample lag − 48 before each microphone sample.
        let settled = (seconds - 1) * 16000
        for i in settled..<(references.count - alignment.margin) { #expect(references[i] == far[i - lag + alignment.margin]) }
    }

    @Test func beforeAMeasurementTheReferenceIsTheTimelines() {
        var alignment = EchoAlignment()
        // Less than the quarter second heard over the speaker that a first measurement waits for.
        let far = Signal.noise(230, dBFS: -20)
        let references = run(&alignment, far: far, start: 5000, lag: 0, jitter: 0)
        #expect(alignment.delay == nil)
        #expect(Array(references[100..<3000]) == Array(far[(100 + alignment.margin)..<(3000 + alignment.margin)]))
    }

    @Test func aJumpOfTheClockMovesTheSideAndResetForgets() {
        var alignment = EchoAlignment()
        alignment.played([Int16](repeating: 7, count: 320), at: 0)
        // 100 samples off: the period runs on from the last.
        alignment.played([Int16](repeating: 8, count: 320), at: 420)
        #expect(alignment.reference(count: 1, at: 320) == [8])
        // An underrun: a second later by the clock, the speaker is placed there.
        alignment.played([Int16](repeating: 9, count: 320), at: 16640)
        #expect(alignment.reference(count: 1, at: 16640) == [9])
        #expect(alignment.reference(count: 1, at: 640) == [0])
        alignment.reset()
        #expect(alignment.reference(count: 1, at: 16640) == [0])
        #expect(alignment.delay == nil)
    }

    @Test func eachSidePlacedAfreshIsToldOnceWithHowFarItMoved() {
        var alignment = EchoAlignment()
        alignment.played([Int16](repeating: 7, count: 320), at: 0)
        _ = alignment.heard([Int16](repeating: 1, count: 320), at: 5)
        #expect(alignment.takePlacements() == [.init(speaker: true, by: nil), .init(speaker: false, by: nil)])
        // Within two periods the sides run on; beyond, they are placed afresh, and told so.
        alignment.played([Int16](repeating: 8, count: 320), at: 420)
        _ = alignment.heard([Int16](repeating: 1, count: 320), at: 325)
        #expect(alignment.takePlacements().isEmpty)
        alignment.played([Int16](repeating: 9, count: 320), at: 16640)
        _ = alignment.heard([Int16](repeating: 1, count: 320), at: 20000)
        #expect(alignment.takePlacements() == [.init(speaker: true, by: 16000), .init(speaker: false, by: 19355)])
        #expect(alignment.takePlacements().isEmpty)
    }

    @Test func whatTheSpeakerTookBackIsWrittenOverWithNoJump() {
        var alignment = EchoAlignment()
        alignment.played([Int16](repeating: 0, count: 3200), at: 0)
        _ = alignment.takePlacements()
        // 2400 samples of queued silence taken back: the sound goes where they were, which is no jump.
        alignment.rewound(2400)
        alignment.played([Int16](repeating: 5, count: 320), at: 800)
        #expect(alignment.takePlacements().isEmpty)
        #expect(alignment.reference(count: 2, at: 799) == [0, 5])
        // Not told, the same write is a side placed afresh, 2400 back.
        var untold = EchoAlignment()
        untold.played([Int16](repeating: 0, count: 3200), at: 0)
        _ = untold.takePlacements()
        untold.played([Int16](repeating: 5, count: 320), at: 800)
        #expect(untold.takePlacements() == [.init(speaker: true, by: -2400)])
    }

    @Test func silenceFromTheSpeakerMeasuresNothing() {
        var alignment = EchoAlignment()
        for p in 0..<200 {
            _ = alignment.heard(Signal.noise(20, dBFS: -20, seed: UInt64(p)), at: Int64(p * 320))
            #expect(alignment.takeMeasurement() == nil)
        }
        #expect(alignment.measurements == 0)
        #expect(alignment.delay == nil)
    }

    /// A speaker heard `lag` samples late from timeline sample `start`, for `seconds`; the seconds
    /// (from `start`) at which a measurement fell due.
    private func play(_ alignment: inout EchoAlignment, from start: Int, lag: Int, seconds: Int) -> [Double] {
        let far = Signal.noise(seconds * 1000 + 600, dBFS: -20, seed: UInt64(start))
        let period = 320
        var due: [Double] = []
        for p in 0..<(seconds * 16000 / period) {
            alignment.played(Array(far[p * period..<(p + 1) * period]), at: Int64(start + p * period))
            let mic: [Int16] = (0..<period).map { k in
                let source = p * period + k - lag
                return source >= 0 ? far[source] / 4 : 0
            }
            _ = alignment.heard(mic, at: Int64(start + p * period))
            if let input = alignment.takeMeasurement() {
                due.append(Double(p * period) / 16000)
                alignment.measured(EchoDelay.estimate(input))
            }
        }
        return due
    }

    @Test func aDelayThatMovedWithANewAnswerIsMeasuredAgainWithinASecondOrTwo() {
        var alignment = EchoAlignment()
        // The first answer: measured once a quarter of a second has been heard over it, and again a
        // quarter later (the first peak, over 90 ms of echo, waits for the next to agree), then every five.
        let first = play(&alignment, from: 0, lag: 2400, seconds: 8)
        #expect(alignment.delay == 2400)
        #expect(first.count == 3 && first[1] < 0.75 && first[2] > 5, "\(first)")
        // The next answer is placed afresh by the clock (ten seconds on), and its echo is heard later.
        let second = play(&alignment, from: 16000 * 18, lag: 4000, seconds: 3)
        #expect(second.last.map { $0 < 1.5 } == true, "\(second)")
        #expect(alignment.delay == 4000)
    }

    @Test func aJumpOfTheMicrophoneIsMeasuredAgainWithinASecondOrTwo() {
        var alignment = EchoAlignment()
        _ = play(&alignment, from: 0, lag: 2400, seconds: 7)
        #expect(alignment.delay == 2400)
        // The speaker runs on where it was; the microphone's next period comes 100 ms later than its
        // last ended (an overrun), and its echo is later by as much.
        let far = Signal.noise(3600, dBFS: -20, seed: 77)
        let period = 320, start = 7 * 16000
        var due: [Double] = []
        for p in 0..<(3 * 16000 / period) {
            alignment.played(Array(far[p * period..<(p + 1) * period]), at: Int64(start + p * period))
            let mic: [Int16] = (0..<period).map { k in
                let source = p * period + k - 2400 - 1600
                return source >= 0 ? far[source] / 4 : 0
            }
            _ = alignment.heard(mic, at: Int64(start + p * period + 1600))
            if let input = alignment.takeMeasurement() {
                due.append(Double(p * period) / 16000)
                alignment.measured(EchoDelay.estimate(input))
            }
        }
        #expect(due.last.map { $0 < 1.5 } == true, "measured again at \(due) s")
        #expect(alignment.delay == 5600)
    }

    @Test func aWeakPeakOrAMoveIsTakenOnceTheNextAgreesAStrongFirstOneAtOnce() {
        var alignment = EchoAlignment()
        alignment.measured(EchoDelay.Estimate(lag: 9000, correlation: 0.4))
        #expect(alignment.delay == nil, "a weak peak alone may be a sidelobe")
        alignment.measured(EchoDelay.Estimate(lag: 4000, correlation: 0.45))
        #expect(alignment.delay == nil, "another weak peak elsewhere: neither is taken")
        alignment.measured(EchoDelay.Estimate(lag: 4030, correlation: -0.4))
        #expect(alignment.delay == 4030)
        // A delay known is moved only once two agree, however strong: one over a tone may be a period off.
        alignment.measured(EchoDelay.Estimate(lag: 6000, correlation: -0.8))
        #expect(alignment.delay == 4030)
        alignment.measured(EchoDelay.Estimate(lag: 4020, correlation: 0.9))
        #expect(alignment.delay == 4030, "the known delay, found again, stands")
        alignment.measured(EchoDelay.Estimate(lag: 6000, correlation: 0.9))
        #expect(alignment.delay == 4030)
        alignment.measured(EchoDelay.Estimate(lag: 6010, correlation: 0.9))
        #expect(alignment.delay == 6010)
    }

    @Test func aStrongFirstPeakOverLittleEchoWaitsForTheNext() {
        var alignment = EchoAlignment()
        alignment.measured(EchoDelay.Estimate(lag: 11_024, correlation: -0.89, echoHeard: 960))
        #expect(alignment.delay == nil, "60 ms of echo: the peak may be a pitch period off")
        alignment.measured(EchoDelay.Estimate(lag: 10_864, correlation: -0.99, echoHeard: 8960))
        #expect(alignment.delay == 10_864, "over more than a quarter second, a strong peak is taken at once")
    }

    /// A reverberant room's strongest peak may be a reflection a little after the direct path: the
    /// filter, from just before the delay, holds it, so the delay stands; an earlier echo moves it.
    @Test(arguments: [(lag: 6010 + 128, moves: false), (lag: 6010 + EchoAlignment.later, moves: false),
                      (lag: 6010 + EchoAlignment.later + 1, moves: true), (lag: 6010 - 16, moves: false),
                      (lag: 6010 - 128, moves: true)])
    func aLittleLaterIsTheSameEchoEarlierIsNot(_ found: (lag: Int, moves: Bool)) {
        var alignment = EchoAlignment()
        alignment.measured(EchoDelay.Estimate(lag: 6010, correlation: 0.9))
        for _ in 0..<3 { alignment.measured(EchoDelay.Estimate(lag: found.lag, correlation: 0.9)) }
        #expect(alignment.delay == (found.moves ? found.lag : 6010))
    }

    @Test func timelineSampleOfTheClock() {
        #expect(EchoAlignment.sample(atNanoseconds: 1_000_000_000) == 16000)
        #expect(EchoAlignment.sample(atNanoseconds: 62_500) == 1)
        // Past 6.7 days of uptime ns * 16000 no longer fits in Int64; the timeline holds to 100 years and beyond.
        let week: UInt64 = 8 * 86_400 * 1_000_000_000
        #expect(EchoAlignment.sample(atNanoseconds: week) == 8 * 86_400 * 16000)
        #expect(EchoAlignment.sample(atNanoseconds: week + 62_500) == 8 * 86_400 * 16000 + 1)
        let century: UInt64 = 100 * 365 * 86_400 * 1_000_000_000 + 999_999_999
        #expect(EchoAlignment.sample(atNanoseconds: century) == 100 * 365 * 86_400 * 16000 + 15999)
        #expect(EchoAlignment.sample(atNanoseconds: .max) == Int64(UInt64.max / 1_000_000_000) * 16000 + 709_551_615 * 16000 / 1_000_000_000)
    }
}

@Suite struct EchoTailTests {
    /// Whether each block of 160 was to be cancelled, for blocks playing or not in turn.
    private func blocks(_ tail: inout EchoTail, _ playing: [Bool]) -> [Bool] {
        playing.map { tail.active(playing: $0, count: 160) }
    }

    @Test func runsWhilePlayingAndForItsLengthAfter() {
        var tail = EchoTail(length: 480)
        #expect(tail.idle)
        #expect(blocks(&tail, [false, true]) == [false, true])
        #expect(!tail.idle)
        // Three blocks of 160 after the last sound, then nothing.
        #expect(blocks(&tail, [false, false, false]) == [true, true, true])
        #expect(tail.idle)
        #expect(blocks(&tail, [false]) == [false])
    }

    @Test func soundWithinTheTailStartsItAgain() {
        var tail = EchoTail(length: 320)
        #expect(blocks(&tail, [true, false, true, false, false, false]) == [true, true, true, true, true, false])
    }
}
