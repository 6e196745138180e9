// The satellite's own ear (`wake` `local`): while nothing else has the room
// (WakeWordGate), the microphone is open and read and each period goes through
// the wake word engine on the audio thread (WakeWordEar); nothing is sent. This
// actor opens and closes the ear and hears only of wakes. A wake hands the open microphone to
// the turn it starts, so the question from the moment of the wake goes up
// whole, and starts that turn through the same entry as `parlourctl listen`
// (its result goes to the journal, watch and the state hook as any turn's).
// The model starts afresh after each wake. Muted, listening or thinking the
// ear is closed; speaking too, unless the echo is cancelled (`bargeIn`).
// Before the turn starts, the satellite's siblings decide who answers the wake
// (WakeArbiter); meanwhile the microphone handed over keeps what it hears, so
// the winner's turn still begins at the wake. One that does not answer sends
// nothing, sounds nothing, and listens for the word again.
import SatelliteCore

/// Listens for the local wake word and starts a turn on each wake.
public actor WakeWordService {
    /// 120 ms a period, four model steps (30 ms each) a wake-up: on the machines measured a wake-up
    /// costs more than the engine's work on it (BENCHMARKS.md). The wake is seen up to a period
    /// late; the turn's audio still starts at the frame that decided it (WakeWordEngine.Wake.end).
    /// Longer periods cost less still (240 ms: 0.631 × the Python reference's CPU against 0.732 ×,
    /// BENCHMARKS.md), but add that much to the wake, and the tests' microphone FIFO (MicFeeder)
    /// holds 200 ms ahead of the reader, so a period near that reads it short.
    public static let periodFrames = 1920

    private let engine: WakeWordEngine
    private let capture: AudioCapture
    private let bus: EventBus
    private let keeper: StateKeeper
    private let startTurn: @Sendable () async -> Void
    private let arbiter: any WakeArbiter
    /// The policy, shared with the ear on the audio thread.
    private let gate: WakeWordEar.Gate
    /// The ear being fed, and which one (a late end of an old one is ignored).
    private var microphone: (number: Int, feed: CaptureFeed)?
    private var opened = 0
    private var retry = Backoff(first: .milliseconds(500), cap: .seconds(30))
    /// The wait before the microphone is tried again: a child of `run()` (`work`).
    private var retrying: WorkGroup.Handle?
    private let work = WorkGroup()
    /// The model failed to run: the ear stays closed (status and doctor say why).
    private var broken = false

    /// `startTurn` runs one turn to its result, as `parlourctl listen` does; `arbiter` says first whether this satellite answers.
    public init(engine: WakeWordEngine, capture: AudioCapture, bus: EventBus, keeper: StateKeeper, refractoryMs: Int,
                bargeIn: Bool = false, arbiter: any WakeArbiter, startTurn: @escaping @Sendable () async -> Void) {
        self.arbiter = arbiter
        self.engine = engine
        self.capture = capture
        self.bus = bus
        self.keeper = keeper
        self.startTurn = startTurn
        self.gate = WakeWordEar.Gate(WakeWordGate(refractoryMs: refractoryMs, bargeIn: bargeIn))
    }

    /// Follows the satellite's state until cancelled.
    public func run() async {
        async let children: Void = work.run()
        let events = bus.subscribe()
        bus.publish(.wakeWord(WakeWordHealth(model: engine.name, ok: true)))
        await follow()
        for await event in events {
            guard case .state = event else { continue }
            await follow()
        }
        retrying?.cancel()
        stopReading()
        // Ended without being cancelled (the bus finished): what runs ends, and run() with it.
        work.finish()
        await children
    }

    /// Whether the gate has the ear open, told the state as it is now, not as an event said it was:
    /// a turn superseded over its answer ends here while the events of the turn that superseded it
    /// may still be on their way, and a gate still at `speaking` would open the ear and take the
    /// microphone from that turn (seen in scripts/bench: the new turn heard nothing until its 60 s
    /// ran out).
    private var listens: Bool {
        let state = keeper.state
        return gate.state.withLock { gate in
            gate.stateChanged(state)
            return gate.listens
        }
    }

    /// Opens the ear when the gate says so, closes it when not.
    private func follow() async {
        if listens, !broken {
            if microphone == nil, retrying == nil { await startReading() }
        } else {
            stopReading()
        }
    }

    private func startReading() async {
        opened += 1
        let number = opened
        let ear = WakeWordEar(engine: engine, gate: gate) { [weak self, work] outcome in
            work.start { [weak self] in await self?.heard(outcome, number: number) }
        }
        let feed: CaptureFeed
        do {
            feed = try await capture.open(periodFrames: Self.periodFrames, into: ear)
        } catch {
            // AudioCapture says what is wrong with the microphone; this tries again.
            retryLater()
            return
        }
        microphone = (number, feed)
        // The state may have moved while the device opened.
        if !listens || broken { stopReading() }
    }

    /// Stops feeding the ear; the device closes unless it was handed over.
    private func stopReading() {
        microphone?.feed.end()
        microphone = nil
    }

    /// What ear `number` ended with: a wake, a failure, or the microphone closing.
    private func heard(_ outcome: WakeWordEar.Outcome, number: Int) async {
        switch outcome {
        case .woke(let probability, let levelDb, let decidedAt, let heardAt, let resetFailed):
            if microphone?.number == number { microphone = nil }
            bus.publish(.wake(model: engine.name, probability: probability))
            // When the detector decided, for scripts/bench.
            bus.notice(.debug, "Wake word decided.", ["monotonic_ns": String(decidedAt)])
            if let resetFailed { fail(resetFailed) }
            // Not a child of run(): the wake word's service stops first at shutdown, and the turn it
            // started must end through the conversation (shutting_down), not by being cancelled here.
            // The microphone handed over keeps what it hears (two seconds, more than any window) until the turn takes it.
            Task { [arbiter] in
                let decision = await arbiter.arbitrate(levelDb: levelDb, probability: probability, wakeNs: heardAt)
                // Another satellite answers (the arbiter's journal line says which): the microphone handed over is dropped.
                if decision?.won != false { await startTurn() }
                await self.turnEnded()
            }
        case .failed(let error):
            if microphone?.number == number { microphone = nil }
            fail(error)
        case .ended(let failed):
            guard microphone?.number == number else { return }
            microphone = nil
            if failed { retryLater() } else { retry.reset(); await follow() }
        }
    }

    private func turnEnded() async {
        gate.state.withLock { $0.turnEnded() }
        // A turn that never opened the microphone (refused at once) leaves it handed over.
        await capture.dropHandOver()
        await follow()
    }

    private func retryLater() {
        guard retrying == nil else { return }
        let delay = retry.next()
        retrying = work.start { [weak self] in
            guard (try? await Task.sleep(for: delay)) != nil else { return }
            await self?.retried()
        }
    }

    private func retried() async {
        retrying = nil
        await follow()
    }

    private func fail(_ error: WakeWordModelError) {
        broken = true
        stopReading()
        bus.publish(.wakeWord(WakeWordHealth(model: engine.name, ok: false, error: error.description)))
    }
}
