// The satellite's own ear (`wake` `local`): while nothing else has the room
// (WakeWordGate), the microphone is open and read and each period goes through
// the wake word engine; nothing is sent. A wake hands the open microphone to
// the turn it starts, so the question from the moment of the wake goes up
// whole, and starts that turn through the same entry as `parlourctl listen`
// (its result goes to the journal, watch and the state hook as any turn's).
// The model starts afresh after each wake. Muted, listening or thinking the
// ear is closed; speaking too, unless the echo is cancelled (`bargeIn`).
import SatelliteCore

/// Listens for the local wake word and starts a turn on each wake.
public actor WakeWordService {
    /// 120 ms a period, four model steps (30 ms each) a wake-up: on the machines measured a wake-up
    /// costs more than the engine's work on it (BENCHMARKS.md). The wake is seen up to a period
    /// late; the turn's audio still starts at the frame that decided it (WakeWordEngine.Wake.end).
    /// Longer periods cost less still, but the tests' microphone FIFO (MicFeeder) holds 200 ms
    /// ahead of the reader and a period near that reads it short.
    public static let periodFrames = 1920

    private let engine: WakeWordEngine
    private let capture: AudioCapture
    private let bus: EventBus
    private let keeper: StateKeeper
    private let startTurn: @Sendable () async -> Void
    private var gate: WakeWordGate
    /// The task reading the microphone, and which one (a late end of an old one is ignored).
    private var microphone: (number: Int, task: Task<Void, Never>)?
    private var opened = 0
    private var retry = Backoff(first: .milliseconds(500), cap: .seconds(30))
    private var retrying: Task<Void, Never>?
    /// The model failed to run: the ear stays closed (status and doctor say why).
    private var broken = false

    /// `startTurn` runs one turn to its result, as `parlourctl listen` does.
    public init(engine: WakeWordEngine, capture: AudioCapture, bus: EventBus, keeper: StateKeeper, refractoryMs: Int,
                bargeIn: Bool = false, startTurn: @escaping @Sendable () async -> Void) {
        self.engine = engine
        self.capture = capture
        self.bus = bus
        self.keeper = keeper
        self.startTurn = startTurn
        self.gate = WakeWordGate(refractoryMs: refractoryMs, bargeIn: bargeIn)
    }

    /// Follows the satellite's state until cancelled.
    public func run() async {
        let events = bus.subscribe()
        bus.publish(.wakeWord(WakeWordHealth(model: engine.name, ok: true)))
        gate.stateChanged(keeper.state)
        await follow()
        for await event in events {
            guard case .state(let state, _) = event else { continue }
            gate.stateChanged(state)
            await follow()
        }
        retrying?.cancel()
        stopReading()
    }

    public func ping() -> Bool { true }

    /// Opens the ear when the gate says so, closes it when not.
    private func follow() async {
        if gate.listens, !broken {
            if microphone == nil, retrying == nil { await startReading() }
        } else {
            stopReading()
        }
    }

    private func startReading() async {
        let frames: AsyncStream<CaptureChunk>
        do {
            frames = try await capture.open(periodFrames: Self.periodFrames)
        } catch {
            // AudioCapture says what is wrong with the microphone; this tries again.
            retryLater()
            return
        }
        opened += 1
        let number = opened
        // On the actor from the start, so a period costs one wake-up of Swift's pool, not a wake-up
        // and then a hop onto the actor. The task holds the service until its stream ends.
        let task = Task { await read(frames, number: number) }
        microphone = (number, task)
        // The state may have moved while the device opened.
        if !gate.listens || broken { stopReading() }
    }

    private func read(_ frames: AsyncStream<CaptureChunk>, number: Int) async {
        var failed = false
        for await chunk in frames {
            guard case .samples(let samples) = chunk else { failed = true; break }
            guard await hear(samples, number: number) else { break }
        }
        await ended(number, failed: failed)
    }

    /// Stops reading; the device closes unless it was handed over.
    private func stopReading() {
        microphone?.task.cancel()
        microphone = nil
    }

    /// One period: false when reading should stop.
    private func hear(_ samples: [Int16], number: Int) async -> Bool {
        guard microphone?.number == number, gate.listens else { return false }
        let wake: WakeWordEngine.Wake?
        do {
            wake = try engine.hear(samples)
        } catch {
            fail(error)
            return false
        }
        guard let wake, gate.heard(atMs: Int64(MonotonicClock.nanoseconds() / 1_000_000)) else { return true }
        // When the detector decided, for scripts/bench.
        let decidedAt = MonotonicClock.nanoseconds()
        // The turn's audio starts where the deciding frame ended, not at the top of the period.
        let question = wake.end < samples.count ? Array(samples[wake.end...]) : nil
        await capture.handOver(startingWith: question)
        microphone = nil
        bus.publish(.wake(model: engine.name, probability: wake.probability))
        bus.notice(.debug, "Wake word decided.", ["monotonic_ns": String(decidedAt)])
        do {
            try engine.reset()
        } catch {
            fail(error)
        }
        Task {
            await startTurn()
            await self.turnEnded()
        }
        return false
    }

    private func turnEnded() async {
        gate.turnEnded()
        // A turn that never opened the microphone (refused at once) leaves it handed over.
        await capture.dropHandOver()
        await follow()
    }

    /// The microphone's stream ended: closed by another consumer, muted, or failed.
    private func ended(_ number: Int, failed: Bool) async {
        guard microphone?.number == number else { return }
        microphone = nil
        if failed { retryLater() } else { retry.reset(); await follow() }
    }

    private func retryLater() {
        guard retrying == nil else { return }
        let delay = retry.next()
        retrying = Task { [weak self] in
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
