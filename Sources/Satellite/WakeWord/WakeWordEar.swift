// The local wake word's ear on the audio thread: each period goes through the
// engine in the wake-up that read it (a CaptureSink), so hearing the room costs
// no wake-up of Swift's pool. Only a wake, the engine failing and the
// microphone ending hop to WakeWordService. A wake hands the open device over
// there and then, with what follows the deciding frame, so the turn it starts
// loses no period. The gate is the service's and the ear's, under a lock that
// neither holds for longer than a look at it. The level the word was heard at
// (for the siblings' decision) is the last second of the processed audio up to
// the frame that decided it (WakeLevel).
import SatelliteCore
import Synchronization

/// One opening of the microphone for the wake word; it feeds `engine`, which only the audio thread
/// touches from then on (its reset too, after a wake).
final class WakeWordEar: CaptureSink, @unchecked Sendable {
    /// What the service hears of it, once.
    enum Outcome: Sendable {
        /// The word, decided at `decidedAt` (CLOCK_MONOTONIC ns) on audio that ended at `heardAt`, heard at
        /// `levelDb` (dBFS); the microphone is handed over. `resetFailed`: the engine could not start afresh after it.
        case woke(probability: Double, levelDb: Double, decidedAt: UInt64, heardAt: UInt64, resetFailed: WakeWordModelError?)
        /// The engine failed to run; the microphone is closed.
        case failed(WakeWordModelError)
        /// The microphone closed: stopped (another consumer, a mute, the gate closing) or failed.
        case ended(failed: Bool)
    }

    /// The gate, shared with the service.
    final class Gate: Sendable {
        let state: Mutex<WakeWordGate>
        init(_ gate: WakeWordGate) { state = Mutex(gate) }
    }

    private let engine: WakeWordEngine
    private let gate: Gate
    private let report: @Sendable (Outcome) -> Void
    /// The audio thread's: the wake decided, or the engine's failure, and the level of what it heard.
    private var wake: (probability: Double, levelDb: Double, decidedAt: UInt64, heardAt: UInt64)?
    private var level = WakeLevel()
    private var failure: WakeWordModelError?

    init(engine: WakeWordEngine, gate: Gate, report: @escaping @Sendable (Outcome) -> Void) {
        self.engine = engine
        self.gate = gate
        self.report = report
    }

    func heard(_ samples: [Int16]) -> CaptureSinkVerdict {
        AudioEngine.shared.owner.assertCurrent()
        // The state may have moved since the service last looked; it closes the ear soon after.
        guard gate.state.withLock({ $0.listens }) else { return .stop }
        // When the period came, before the model's time on it, which differs from one machine (and
        // one moment's load) to the next: siblings compare these.
        let came = MonotonicClock.nanoseconds()
        let heard: WakeWordEngine.Wake?
        do {
            heard = try engine.hear(samples)
        } catch {
            failure = error
            return .stop
        }
        let now = MonotonicClock.nanoseconds()
        guard let heard, gate.state.withLock({ $0.heard(atMs: Int64(now / 1_000_000)) }) else {
            level.add(samples)
            return .more
        }
        level.add(samples[..<min(max(heard.end, 0), samples.count)])
        // Siblings compare when each heard the word, and a period's end is up to a period after the
        // frame that decided it: the frame's own time is the period's end less the samples after it.
        let after = UInt64(max(samples.count - max(heard.end, 0), 0)) * 1_000_000_000 / 16_000
        wake = (heard.probability, level.dBFS, now, came >= after ? came - after : 0)
        // The turn's audio starts where the deciding frame ended, not at the top of the period.
        return .handOver(keeping: heard.end < samples.count ? Array(samples[heard.end...]) : nil)
    }

    func ended(_ how: CaptureSinkEnd) {
        AudioEngine.shared.owner.assertCurrent()
        if let wake {
            // Before the report, as before the ear ran here: the next ear finds the model afresh.
            var resetFailed: WakeWordModelError?
            do { try engine.reset() } catch { resetFailed = error }
            report(.woke(probability: wake.probability, levelDb: wake.levelDb, decidedAt: wake.decidedAt, heardAt: wake.heardAt,
                         resetFailed: resetFailed))
        } else if let failure {
            report(.failed(failure))
        } else {
            if case .failed = how { report(.ended(failed: true)) } else { report(.ended(failed: false)) }
        }
    }
}
