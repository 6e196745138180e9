// A microphone as a stream of chunks, one ALSA period each (20 ms unless asked
// otherwise). The audio thread (AudioEngine) reads it when poll says a period
// is ready and yields the chunk in that same wake-up. Easy to get wrong: a stop
// wakes the audio thread (no data may come), and the handle is closed by that
// thread alone, once. And a stream's onTermination takes no lock that is held
// while a chunk is yielded: the yield wakes the consumer's task, which needs
// that task's status lock, held by whoever is cancelling it while onTermination
// runs (a mute cancelling the stream's reader deadlocked the audio thread and a
// pool thread so).
// The consumer is a stream, or a sink that hears each period on the audio
// thread in the wake-up that read it (the local wake word: no hop through
// Swift's pool a period). The consumer can hand the device on (`detach`, or a
// sink's `.handOver`, then `attach`) without closing it: the local wake word
// gives the turn it starts the audio from the moment of the wake, none lost to
// closing and reopening the device.
// A device kept open (`keeps`: while the echo is cancelled, AudioCapture) is
// not closed when its consumer leaves: it reads on, what it hears dropped,
// and the next consumer takes it as it is, so the echo's path through it does
// not move from one turn to the next.
import CALSA
import Synchronization

/// What the capture thread hands over: one period of samples, or why it ended.
public enum CaptureChunk: Sendable, Equatable {
    /// One period of interleaved samples, in order.
    case samples([Int16])
    /// The device failed for good (unplugged, I/O error); the stream ends after this.
    case failed(ALSAError)
}

/// A consumer that hears each period on the audio thread, in the wake-up that read it. It must not
/// block: no actor, no lock held for long, no I/O; a slow sink delays the speaker and the microphone.
public protocol CaptureSink: AnyObject, Sendable {
    /// One period of interleaved samples, in order; on the audio thread. Says what the device does next.
    func heard(_ samples: [Int16]) -> CaptureSinkVerdict
    /// The device feeds this sink no more; once, after its last `heard`, on the audio thread.
    func ended(_ how: CaptureSinkEnd)
}

/// What a sink wants after a period.
public enum CaptureSinkVerdict: Sendable, Equatable {
    /// The next period, please.
    case more
    /// Stop: the device closes, as when a stream's consumer stops iterating.
    case stop
    /// Keep reading for the next `attach()`, whose stream begins with `first` and what is heard from
    /// now on (as `detach(keeping:)`), with no period lost between.
    case handOver(keeping: [Int16]?)
}

/// Why a sink is fed no more.
public enum CaptureSinkEnd: Sendable, Equatable {
    /// It asked for `.handOver`: the device reads on for the next consumer.
    case handedOver
    /// It asked to stop, its feed was ended, or the device was stopped (closed, muted).
    case stopped
    /// The device failed for good (unplugged, I/O error).
    case failed(ALSAError)
}

/// A sink's hold on the device (`feed`): `end()` stops the device unless the sink handed it over.
public struct CaptureFeed: Sendable {
    fileprivate let device: ALSACaptureDevice
    fileprivate let sink: any CaptureSink

    /// Stops the device if this sink is still its consumer; the sink hears `ended(.stopped)`.
    public func end() { device.unfeed(sink) }
}

/// One open capture PCM and the thread that reads it.
///
/// Threads: `open` configures the handle on the caller's thread (AudioCapture calls it on the
/// audio thread). After `frames()` only the audio thread touches the handle, and closes it when
/// the device stops. If `frames()` is never called, `stop()` (or deinit) closes it.
public final class ALSACaptureDevice: AudioEngineSide, @unchecked Sendable {
    public let device: String
    public let rate: Int
    public let channels: Int
    /// Frames per chunk: the period ALSA settled on.
    public let periodFrames: Int
    /// Whether it is kept open when its consumer leaves (and taken over by the next).
    public let keeps: Bool

    private let pcm: OpaquePointer
    private let engine: AudioEngine
    private let stopping = Atomic<Bool>(false)
    private let overrunCount = Atomic<Int>(0)
    // The lock order: `life` first; `consumer` or `listeners` may be taken under it, never the other way.
    private let life = OrderedLock(Life(), rank: 1, name: "the capture device's life")
    /// Listeners in (`copies()`): each gets every chunk, as the microphone gave it or processed.
    private let listeners = OrderedLock<[Int: (continuation: AsyncStream<CaptureChunk>.Continuation, processed: Bool)]>(
        [:], rank: 2, name: "its listeners")
    /// Who gets the chunks: the consumer's stream, or (detached) a backlog for the next one.
    private let consumer = OrderedLock(Consumer.none, rank: 2, name: "its consumer")
    /// The attached consumer's id (-1 for none), set with `consumer`, for its onTermination to read without the lock.
    private let consumerID = Atomic<Int>(-1)

    private enum Consumer {
        case none
        case attached(id: Int, AsyncStream<CaptureChunk>.Continuation)
        case sink(any CaptureSink)
        case waiting([[Int16]])
        /// Kept open for the next consumer, with nobody listening: what it hears is dropped.
        case kept
    }

    private struct Life {
        var started = false
        var closed = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var nextListener = 0
    }

    /// The audio thread's, while it drives the device: the period being filled, how far, and
    /// what to tell of a failure.
    private var chunk: [Int16] = []
    private var filled = 0
    private var onFailure: (@Sendable (ALSAError) -> Void)?

    private init(device: String, rate: Int, channels: Int, pcm: ALSAPCM, engine: AudioEngine, processed: Bool, keeps: Bool) {
        self.engine = engine
        self.keeps = keeps
        processes = processed && rate == 16000 && channels == 1
        self.device = device
        self.rate = rate
        self.channels = channels
        self.periodFrames = pcm.periodFrames
        self.pcm = pcm.handle
    }

    deinit {
        if !life.withLock({ $0.closed }) { snd_pcm_close(pcm) }
    }

    /// Opens and configures the device now, so a missing microphone is known at once.
    /// S16_LE interleaved; `default` converts from whatever the card does.
    /// Unless `processed` is false (a listener in alone: doctor, the meter), its chunks are the
    /// microphone's processing's (AudioEngine). `keeps`: kept open when its consumer leaves.
    public static func open(device: String, rate: Int = 16000, channels: Int = 1, periodFrames: Int = 320,
                            processed: Bool = true, keeps: Bool = false, engine: AudioEngine = .shared) throws(ALSAError) -> ALSACaptureDevice {
        let pcm = try ALSAPCM.open(device: device, stream: SND_PCM_STREAM_CAPTURE, rate: rate,
                                   channels: channels, periodFrames: periodFrames)
        return ALSACaptureDevice(device: device, rate: rate, channels: channels, pcm: pcm, engine: engine, processed: processed,
                                 keeps: keeps)
    }

    /// Audio lost so far: overruns ALSA recovered from (the thread fell a whole buffer
    /// behind), and chunks dropped because the consumer (or the next one, after a hand-over) fell two seconds behind.
    public var overruns: Int { overrunCount.load(ordering: .relaxed) }

    /// Has the audio thread read the device and returns its chunks. The stream ends after `stop()`,
    /// when the consumer stops iterating, or after a `.failed` chunk; by then the device is
    /// closed. Only the first call starts anything; later calls get an empty stream.
    /// `onFailure` runs on the audio thread just before the `.failed` chunk is yielded.
    public func frames(onFailure: (@Sendable (ALSAError) -> Void)? = nil) -> AsyncStream<CaptureChunk> {
        let (stream, continuation) = AsyncStream.makeStream(of: CaptureChunk.self, bufferingPolicy: .bufferingNewest(chunkBound))
        let first = life.withLock { life in
            defer { life.started = true }
            return !life.started && !life.closed
        }
        guard first else {
            continuation.finish()
            return stream
        }
        consume(continuation, id: 0)
        self.onFailure = onFailure
        engine.attach(self)
        return stream
    }

    /// Has the audio thread read the device and hand each period to `sink` there. Only the first call
    /// (of this or `frames()`) starts anything; a later one ends `sink` (`.stopped`) at once.
    /// `onFailure` runs on the audio thread before the sink hears `ended(.failed)`.
    public func feed(_ sink: any CaptureSink, onFailure: (@Sendable (ALSAError) -> Void)? = nil) -> CaptureFeed {
        let first = life.withLock { life in
            defer { life.started = true }
            return !life.started && !life.closed
        }
        guard first else {
            // On the audio thread, as a sink is told everything.
            engine.perform { sink.ended(.stopped) }
            return CaptureFeed(device: self, sink: sink)
        }
        consumer.withLock { $0 = .sink(sink) }
        self.onFailure = onFailure
        engine.attach(self)
        return CaptureFeed(device: self, sink: sink)
    }

    /// Has the audio thread read the device for nobody yet (a device kept open, opened before anyone
    /// listens); the next `attach()` or `take(_:)` is its consumer. Only the first start starts anything.
    public func startKept(onFailure: (@Sendable (ALSAError) -> Void)? = nil) {
        let first = life.withLock { life in
            defer { life.started = true }
            return !life.started && !life.closed
        }
        guard first else { return }
        consumer.withLock { $0 = .kept }
        self.onFailure = onFailure
        engine.attach(self)
    }

    fileprivate func unfeed(_ sink: any CaptureSink) {
        let current = consumer.withLock { c in
            guard case .sink(let now) = c, now === sink else { return false }
            if keeps { c = .kept }
            return true
        }
        guard current else { return }
        // Kept, the device reads on for the next consumer; the sink hears its end on the audio thread.
        if keeps { engine.perform { sink.ended(.stopped) } } else { stop() }
    }

    /// Its consumer is done: a device kept open reads on for the next, what it hears dropped (a
    /// consumer's stream ends, a sink hears `ended(.stopped)`); any other is stopped.
    public func release() {
        guard keeps else { return stop() }
        let old = consumer.withLock { c -> Consumer in
            // Neither a consumer nor kept (none): nothing to let go.
            if case .none = c { return .none }
            defer {
                c = .kept
                consumerID.store(-1, ordering: .relaxed)
            }
            return c
        }
        let (stream, sink) = Self.parts(of: old)
        stream?.finish()
        if let sink { engine.perform { sink.ended(.stopped) } }
    }

    /// `sink` as the consumer of a device kept open, in place of whoever had it (who is let go); nil
    /// when the device is not kept or has closed.
    public func take(_ sink: any CaptureSink) -> CaptureFeed? {
        guard keeps else { return nil }
        let old: Consumer? = life.withLock { life in
            guard !life.closed, life.started else { return nil }
            return consumer.withLock { c in
                defer {
                    c = .sink(sink)
                    consumerID.store(-1, ordering: .relaxed)
                }
                return c
            }
        }
        guard let old else { return nil }
        let (stream, before) = Self.parts(of: old)
        stream?.finish()
        if let before { engine.perform { before.ended(.stopped) } }
        return CaptureFeed(device: self, sink: sink)
    }

    /// The stream or the sink a consumer is.
    private static func parts(of consumer: Consumer) -> (AsyncStream<CaptureChunk>.Continuation?, (any CaptureSink)?) {
        switch consumer {
        case .attached(_, let continuation): return (continuation, nil)
        case .sink(let sink): return (nil, sink)
        case .waiting, .kept, .none: return (nil, nil)
        }
    }

    /// Makes `continuation` the consumer; its stream ending (the consumer gone) stops the device,
    /// unless it was detached first.
    private func consume(_ continuation: AsyncStream<CaptureChunk>.Continuation, id: Int) {
        consumer.withLock { c in
            c = .attached(id: id, continuation)
            consumerID.store(id, ordering: .relaxed)
        }
        // Kept, the device reads on: the audio thread finds the stream ended as it yields, and keeps it
        // for the next (taking no lock here: see the top).
        continuation.onTermination = { [weak self] _ in
            guard let self, !self.keeps, self.consumerID.load(ordering: .relaxed) == id else { return }
            self.stop()
        }
    }

    /// Ends the consumer's stream but keeps the device reading: what it hears waits (the newest two
    /// seconds, after `first`) for `attach()`. False when the device is closed or its consumer is not
    /// a stream (a sink hands over itself, on the audio thread).
    public func detach(keeping first: [Int16]? = nil) -> Bool {
        let old: AsyncStream<CaptureChunk>.Continuation? = consumer.withLock { c in
            guard case .attached(_, let continuation) = c else { return nil }
            c = .waiting(first.map { [$0] } ?? [])
            consumerID.store(-1, ordering: .relaxed)
            return continuation
        }
        old?.finish()
        return old != nil
    }

    /// Detached (or handed over by its sink) and reading for the next `attach()`.
    public var isHandedOver: Bool {
        consumer.withLock { c in
            if case .waiting = c { return true }
            return false
        }
    }

    /// A new consumer for a detached device: its stream begins with what was heard since `detach()`.
    /// A device kept open is taken from whoever has it (who is let go), with nothing from before.
    /// nil when the device is neither (or has closed since).
    public func attach() -> AsyncStream<CaptureChunk>? {
        let (stream, continuation) = AsyncStream.makeStream(of: CaptureChunk.self, bufferingPolicy: .bufferingNewest(chunkBound))
        let taken: (id: Int, old: Consumer)? = life.withLock { life in
            guard !life.closed, life.started else { return nil }
            life.nextListener += 1
            let id = life.nextListener
            return consumer.withLock { c in
                switch c {
                case .waiting(let backlog):
                    for chunk in backlog { continuation.yield(.samples(chunk)) }
                case .kept, .attached, .sink:
                    guard keeps else { return nil }
                case .none:
                    return nil
                }
                defer { c = .attached(id: id, continuation) }
                return (id, c)
            }
        }
        guard let taken else { return nil }
        let (old, sink) = Self.parts(of: taken.old)
        old?.finish()
        if let sink { engine.perform { sink.ended(.stopped) } }
        consume(continuation, id: taken.id)
        return stream
    }

    /// Two seconds of chunks: a consumer further behind loses the oldest.
    private var chunkBound: Int { max(4, 2 * rate / max(1, periodFrames)) }

    /// Asks the audio thread to stop reading; it does at once and closes the device.
    /// Before `frames()` it closes the device at once.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        engine.wakeUp()
        let closeNow = life.withLock { life in
            defer { if !life.started { life.started = true } }
            return !life.started && !life.closed
        }
        if closeNow {
            snd_pcm_close(pcm)
            markClosed()
        }
    }

    /// Returns once the device is closed (after `stop()`, a failure, or the consumer leaving).
    public func closed() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let done = life.withLock { life in
                if !life.closed { life.waiters.append(waiter) }
                return life.closed
            }
            if done { waiter.resume() }
        }
    }

    /// True once the device is closed (stopped, failed, or its consumer left).
    public var isClosed: Bool { life.withLock { $0.closed } }

    /// A copy of every chunk from now on, for someone who only listens in (doctor, the level
    /// meter) while the consumer keeps the device; it ends when the device closes. As the
    /// microphone gave it, or as the consumer gets it (`processed`).
    public func copies(processed: Bool = false) -> AsyncStream<CaptureChunk> {
        let (stream, continuation) = AsyncStream.makeStream(of: CaptureChunk.self, bufferingPolicy: .bufferingNewest(100))
        let key: Int? = life.withLock { life in
            guard !life.closed else { return nil }
            life.nextListener += 1
            // Under the same lock as `closed`, so a device closing now finishes this copy too.
            listeners.withLock { $0[life.nextListener] = (continuation, processed) }
            return life.nextListener
        }
        guard let key else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in self?.listeners.withLock { _ = $0.removeValue(forKey: key) } }
        return stream
    }

    private func markClosed() {
        let waiters = life.withLock { life in
            life.closed = true
            defer { life.waiters.removeAll() }
            return life.waiters
        }
        for listener in listeners.withLock({ l in defer { l.removeAll() }; return Array(l.values) }) { listener.continuation.finish() }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: On the audio thread

    var handle: OpaquePointer { pcm }
    var polls: Bool { true }
    var deadline: UInt64? { nil }

    func begin() -> Bool {
        engine.owner.assertCurrent()
        chunk = [Int16](repeating: 0, count: periodFrames * channels)
        if stopping.load(ordering: .acquiring) { return end(nil) }
        if let error = call(snd_pcm_start(pcm), "snd_pcm_start") { return end(error) }
        if processes { engine.microphoneOpened(device, pcm: pcm) }
        return true
    }

    /// Whether the microphone's processing has its chunks: the echo canceller and the rest work on
    /// 16 kHz mono, the rate AudioCapture opens at (plug converts).
    private let processes: Bool

    /// Reads what the device has, yielding each whole period as it fills.
    func service(revents: UInt16, now: UInt64) -> Bool {
        engine.owner.assertCurrent()
        if stopping.load(ordering: .acquiring) { return end(nil) }
        guard revents != 0 else { return true }
        while true {
            let got: Int = chunk.withUnsafeMutableBufferPointer { buffer in
                snd_pcm_readi(pcm, buffer.baseAddress! + filled * channels, snd_pcm_uframes_t(periodFrames - filled))
            }
            if got > 0 {
                filled += got
                if filled == periodFrames {
                    let listening = listeners.withLock { Array($0.values) }
                    let raw = listening.contains { !$0.processed } ? chunk : nil
                    if processes { engine.microphoneRead(&chunk, pcm: pcm) }
                    let (dropped, sink): (Bool, (any CaptureSink)?) = consumer.withLock { c in
                        switch c {
                        case .attached(_, let continuation):
                            switch continuation.yield(.samples(chunk)) {
                            case .dropped: return (true, nil)
                            // The consumer left a device kept open: it reads on for the next.
                            case .terminated where keeps: c = .kept
                            default: break
                            }
                            return (false, nil)
                        case .sink(let sink):
                            return (false, sink)
                        case .waiting(var backlog):
                            backlog.append(chunk)
                            // The next consumer is two seconds late: the oldest is lost, and counted so.
                            let over = backlog.count > chunkBound
                            if over { backlog.removeFirst() }
                            c = .waiting(backlog)
                            return (over, nil)
                        case .kept, .none:
                            return (false, nil)
                        }
                    }
                    if dropped { overrunCount.add(1, ordering: .relaxed) }
                    // Out of the lock, which a copy's onTermination takes (see the top).
                    for listener in listening { listener.continuation.yield(.samples(listener.processed ? chunk : raw ?? chunk)) }
                    filled = 0
                    // Outside the lock: the sink's work (the wake word's engine) holds up no other thread.
                    if let sink, !hand(chunk, to: sink) { return end(nil) }
                    // Kept for nobody, and no longer wanted (the canceller switched off: two cards): let go.
                    if keeps, !engine.cancelsEcho, consumer.withLock({ if case .kept = $0 { true } else { false } }) { return end(nil) }
                }
                continue
            }
            switch Int32(-got) {
            case 0, EAGAIN:
                return true
            case EINTR:
                continue
            case EPIPE, ESTRPIPE:
                // Overrun (or a suspend): recover, and start again since capture
                // does not restart by itself.
                overrunCount.add(1, ordering: .relaxed)
                if let error = call(snd_pcm_recover(pcm, Int32(got), 1), "snd_pcm_recover") { return end(error) }
                if let error = call(snd_pcm_start(pcm), "snd_pcm_start") { return end(error) }
            default:
                return end(ALSAError(function: "snd_pcm_readi", code: Int32(truncatingIfNeeded: got), device: device))
            }
        }
    }

    /// One period to the sink; false when it asked to stop (and is still the consumer).
    private func hand(_ samples: [Int16], to sink: any CaptureSink) -> Bool {
        let verdict = sink.heard(samples)
        if verdict == .more { return true }
        let applies = consumer.withLock { c in
            guard case .sink(let now) = c, now === sink else { return false }
            if case .handOver(let first) = verdict { c = .waiting(first.map { [$0] } ?? []) }
            if verdict == .stop, keeps { c = .kept }
            return true
        }
        guard applies else { return true }
        if verdict == .stop {
            // Kept, the device reads on for the next consumer.
            guard keeps else { return false }
            sink.ended(.stopped)
            return true
        }
        sink.ended(.handedOver)
        return true
    }

    /// Closes the device, tells of `failure` and ends the stream; false, for the engine to let go.
    private func end(_ failure: ALSAError?) -> Bool {
        snd_pcm_drop(pcm)
        snd_pcm_close(pcm)
        // Let go of it here: the owner's closure holds this device (to name it in the failure),
        // and kept, the two held each other and every device ever opened stayed in memory.
        let onFailure = self.onFailure.take()
        if let failure { onFailure?(failure) }
        let (last, sink): (AsyncStream<CaptureChunk>.Continuation?, (any CaptureSink)?) = consumer.withLock { c in
            defer {
                c = .none
                consumerID.store(-1, ordering: .relaxed)
            }
            return Self.parts(of: c)
        }
        if let failure { last?.yield(.failed(failure)) }
        markClosed()
        last?.finish()
        sink?.ended(failure.map { .failed($0) } ?? .stopped)
        return false
    }

    private func call(_ result: Int32, _ function: String) -> ALSAError? {
        result < 0 ? ALSAError(function: function, code: result, device: device) : nil
    }
}
