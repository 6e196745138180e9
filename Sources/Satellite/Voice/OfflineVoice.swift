// The satellite's own voice, for the one thing it must say itself: that the
// house cannot be reached. espeak-ng speaks it (its C library, in memory;
// nothing leaves the satellite). The sentence never changes while the daemon
// runs, so it is spoken once, on a thread of its own the first time it is
// needed, kept as PCM, and espeak-ng is shut down and closed again: a
// satellite that always reaches its house never loads espeak-ng (nor the
// PulseAudio libraries it links, CEspeak/shim.h), and saying it again costs
// nothing. Easy to get wrong: espeak-ng's API is not thread-safe (only that
// one thread ever calls it), and its synchronous mode blocks, so it never runs
// on the main loop, where every task and actor runs (MainLoop).
import CEspeak
import Glibc
import SatelliteCore
import Synchronization

/// Says "I can't reach the house right now." (`offline.text`) in `offline.voice`.
public final class OfflineVoice: Sendable {
    public struct Settings: Sendable {
        /// An espeak-ng language or voice name.
        public var voice: String
        public var text: String
        /// The config file, to name it in a warning about the voice.
        public var configFile: String

        public init(voice: String, text: String, configFile: String) {
            self.voice = voice
            self.text = text
            self.configFile = configFile
        }
    }

    private enum Preparation {
        case notStarted
        case running([CheckedContinuation<PCMAudio?, Never>])
        case done(PCMAudio?)
    }

    private let settings: Settings
    private let bus: EventBus
    private let preparation = Mutex(Preparation.notStarted)

    public init(settings: Settings, bus: EventBus) {
        self.settings = settings
        self.bus = bus
    }

    /// Starts speaking the notice into memory, on a thread of its own; only the first call does anything.
    private func prepare() {
        let start = preparation.withLock { state in
            guard case .notStarted = state else { return false }
            state = .running([])
            return true
        }
        guard start else { return }
        SpareThreads.shared.run(name: "espeak-ng") { [self] in
            let audio = synthesize()
            let waiters = preparation.withLock { state in
                defer { state = .done(audio) }
                if case .running(let waiters) = state { return waiters }
                return []
            }
            for waiter in waiters { waiter.resume(returning: audio) }
        }
    }

    /// The notice as audio, once it is ready; nil when espeak-ng could not say it (the journal says why).
    public func notice() async -> PCMAudio? {
        prepare()
        return await withCheckedContinuation { (waiter: CheckedContinuation<PCMAudio?, Never>) in
            let ready = preparation.withLock { state -> PCMAudio?? in
                switch state {
                case .done(let audio): return .some(audio)
                case .running(let waiters):
                    state = .running(waiters + [waiter])
                    return .none
                case .notStarted: return .some(nil)  // prepare() above has started it
                }
            }
            if let ready { waiter.resume(returning: ready) }
        }
    }

    /// Where espeak-ng's synth callback puts the samples; touched only on the espeak-ng thread.
    private final class Samples {
        var values: [Int16] = []
    }

    /// On the espeak-ng thread: opens and starts espeak-ng, speaks the text, shuts it down and closes it.
    private func synthesize() -> PCMAudio? {
        var api = parlour_espeak()
        if let failure = parlour_espeak_open(&api) {
            bus.notice(.error, "espeak-ng could not be loaded (\(String(cString: failure))), so the satellite cannot say"
                + " that the house is out of reach; is libespeak-ng1 installed?")
            return nil
        }
        defer { parlour_espeak_close(&api) }
        let rate = api.initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, nil, Int32(espeakINITIALIZE_DONT_EXIT))
        guard rate > 0 else {
            bus.notice(.error, "espeak-ng could not start (espeak_Initialize gave \(rate)), so the satellite cannot say"
                + " that the house is out of reach; is espeak-ng-data installed?")
            return nil
        }
        defer { _ = api.terminate() }
        api.setSynthCallback { wav, count, events in
            // Every event of a call carries the user_data given to espeak_Synth.
            guard let wav, count > 0, let user = events?.pointee.user_data else { return 0 }
            Unmanaged<Samples>.fromOpaque(user).takeUnretainedValue().values
                .append(contentsOf: UnsafeBufferPointer(start: wav, count: Int(count)))
            return 0
        }
        let chosen = settings.voice.withCString { api.setVoiceByName($0) }
        if chosen != EE_OK {
            bus.notice(.warning, "\(settings.configFile): offline.voice: espeak-ng has no voice \"\(settings.voice)\", so the notice"
                + " is said in its default voice; espeak-ng --voices lists the languages it has.", ["voice": settings.voice])
        }
        let samples = Samples()
        let user = Unmanaged.passRetained(samples)
        defer { user.release() }
        let spoken = settings.text.withCString { text in
            api.synth(text, strlen(text) + 1, 0, POS_CHARACTER, 0, UInt32(espeakCHARS_UTF8), nil, user.toOpaque())
        }
        guard spoken == EE_OK, !samples.values.isEmpty else {
            bus.notice(.error, "espeak-ng could not say the offline notice (espeak_Synth gave \(spoken.rawValue)).")
            return nil
        }
        bus.notice(.debug, "The offline notice is ready.", ["voice": settings.voice, "ms": String(samples.values.count * 1000 / Int(rate))])
        return PCMAudio(sampleRate: Int(rate), channels: 1, samples: samples.values)
    }
}
