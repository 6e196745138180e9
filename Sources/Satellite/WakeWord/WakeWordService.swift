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
    /// 60 ms a period: two model steps (30 ms each) a wake-up.
    public static let periodFrames = 960

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
        let task = Task { [weak self] in
            var failed = false
            for await chunk in frames {
                guard let self else { return }
                guard case .samples(let samples) = chunk else { failed = true; break }
                guard await self.hear(samples, number: number) else { break }
            }
            await self?.ended(number, failed: failed)
        }
        microphone = (number, task)
        // The state may have moved while the device opened.
        if !gate.listens || broken { stopReading() }
    }

    /// Stops reading; the device closes unless it was handed over.
    private func stopReading() {
        microphone?.task.cancel()
        microphone = nil
    }

    /// One period: false when reading should stop.
    private func hear(_ samples: [Int16], number: Int) async -> Bool {
        guard microphone?.number == number, gate.listens else { return false }
        let probability: Double?
        do {
            probability = try engine.hear(samples)
        } catch {
            fail(error)
            return false
        }
        guard let probability, gate.heard(atMs: Int64(MonotonicClock.nanoseconds() / 1_000_000)) else { return true }
        // When the detector decided, for scripts/bench.
        let decidedAt = MonotonicClock.nanoseconds()
        await capture.handOver(startingWith: samples)
        microphone = nil
        bus.publish(.wake(model: engine.name, probability: probability))
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
