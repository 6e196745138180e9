// The one owner of the microphone. It opens the device only while someone
// consumes its frames (the record transport opens it per utterance), reports
// the microphone's health on the bus when it changes, and while the device is
// broken probes it with back-off. Frames go to the one consumer, never the bus.
// Muted, it does not open the device at all, not even to probe it: the device
// is released so that another program may have it. The local wake word hands
// the open device to the turn it starts (its sink's `.handOver`, on the audio
// thread): the next `open()` takes it as it is, with what it heard meanwhile, so
// no word after the wake is lost. What it starts (the retries, a listener's
// copies, the hop back from the audio thread after a failure) is a child of
// its `run()`.
// While the echo is cancelled (`keptPeriod`, and the canceller runs: not two
// cards, not muted), the device a consumer opens is instead kept open, as the
// speaker is: each later consumer takes it in turn, and what it hears while
// nobody listens is dropped (so it is opened by the first consumer, not at the
// start: a test's recorded question waits in its file for the turn). A device
// opened afresh starts its part of the echo's path afresh (in the test room it
// moved 30 to 230 ms), and the next answer's first second would run on the
// last one's delay.
import Glibc
import SatelliteCore

/// Owns the capture device: opens it for one consumer at a time and watches its health.
public actor AudioCapture {
    public let device: String
    private let bus: EventBus
    private let engine: AudioEngine
    private var watch: DeviceWatch
    private var current: ALSACaptureDevice?
    /// The device opened last, open or not: a mute waits until even one being closed is released.
    private var last: ALSACaptureDevice?
    private var muted: Bool
    private let work = WorkGroup()
    /// The period of the device kept open while the echo is cancelled; nil: opened for each consumer.
    private let keptPeriod: Int?
    /// A device being opened, and who waits for it (`openDevice`).
    private var opening = false
    private var openingWaiters: [CheckedContinuation<Void, Never>] = []

    /// `retry` is the back-off between probes of a broken device; `keptPeriod`, the period of the
    /// device kept open while the echo is cancelled (nil: it is opened for each consumer).
    public init(device: String, bus: EventBus, retry: Backoff = Backoff(first: .seconds(1), cap: .seconds(30)),
                muted: Bool = false, keptPeriod: Int? = nil, engine: AudioEngine = .shared) {
        self.device = device
        self.keptPeriod = keptPeriod
        self.engine = engine
        self.muted = muted
        self.bus = bus
        self.watch = DeviceWatch(device: device, bus: bus, backoff: retry, work: work, event: SatelliteEvent.microphone)
    }

    /// Runs what the microphone starts until cancelled, then closes the device. Whoever makes an
    /// AudioCapture runs it: without run(), no retry, listener or failure is carried through.
    public func run() async {
        await work.run {
            watch.stop()
            await shut()
        }
    }

    /// Whether a device opened now is kept open: the echo is cancelled and nothing is muted.
    private var keeps: Bool { keptPeriod != nil && !muted && engine.cancelsEcho }

    /// Opens the microphone and returns the stream of its chunks for the one consumer.
    /// A stream already open is closed first. The device closes when the consumer
    /// stops iterating, on `close()`, or after a `.failed` chunk (then retries begin).
    /// `periodFrames` is the chunk ALSA is asked for: each one is a wake-up of the capture
    /// thread and a hop to the consumer, so a consumer that judges longer stretches asks for longer.
    /// After a hand-over (`handOver()`, or a sink's), or while it is kept open, it takes the device
    /// still open, with its period, instead.
    public func open(periodFrames: Int = 320) async throws(ALSAError) -> AsyncStream<CaptureChunk> {
        try await open(periodFrames: periodFrames, processed: true, keep: keeps)
    }

    /// `open()`, with the chunks processed or as the microphone gave them; `keep`, kept open after.
    private func open(periodFrames: Int, processed: Bool, keep: Bool) async throws(ALSAError) -> AsyncStream<CaptureChunk> {
        // Callers do not ask while muted; one that raced a mute is refused without a word on the bus.
        if muted { throw ALSAError(function: "snd_pcm_open", code: -EPERM, device: device) }
        if let stream = current?.attach() { return stream }
        let capture = try await openDevice(periodFrames: periodFrames, processed: processed, keep: keep)
        // Kept, it reads already (for nobody); one that failed since gives an ended stream.
        if capture.keeps { return capture.attach() ?? capture.frames() }
        return capture.frames(onFailure: failure(of: capture))
    }

    /// What a device's failure does (on the audio thread): hops here, and retries begin.
    private func failure(of capture: ALSACaptureDevice) -> @Sendable (ALSAError) -> Void {
        { [weak self, work] error in
            work.start { [weak self] in await self?.captureFailed(capture, error) }
        }
    }

    /// Opens the microphone for `sink`, which hears each period on the audio thread in the wake-up
    /// that read it (the local wake word); as `open()` otherwise, but a device handed over is
    /// closed, not taken, unless it is kept open (then what it kept is dropped). The sink hears
    /// `ended` once whatever happens after this returns.
    public func open(periodFrames: Int = 320, into sink: any CaptureSink) async throws(ALSAError) -> CaptureFeed {
        if muted { throw ALSAError(function: "snd_pcm_open", code: -EPERM, device: device) }
        if let feed = current?.take(sink) { return feed }
        let capture = try await openDevice(periodFrames: periodFrames, keep: keeps)
        if capture.keeps, let feed = capture.take(sink) { return feed }
        return capture.feed(sink, onFailure: failure(of: capture))
    }

    /// Closes what is open and opens the device afresh, as `current`: `keep`, kept open at its own
    /// period (and reading already, for nobody).
    private func openDevice(periodFrames: Int, processed: Bool = true, keep: Bool) async throws(ALSAError) -> ALSACaptureDevice {
        // One at a time: the device kept open that another opened meanwhile is this one's too.
        while opening { await withCheckedContinuation { openingWaiters.append($0) } }
        if keep, let current, current.keeps, !current.isClosed { return current }
        opening = true
        defer {
            opening = false
            for waiter in openingWaiters { waiter.resume() }
            openingWaiters = []
        }
        // Another open may slip in while this one waits for the old device to close.
        while current != nil { await shut() }
        if muted { throw ALSAError(function: "snd_pcm_open", code: -EPERM, device: device) }
        let capture: ALSACaptureDevice
        let (device, engine, keeps) = (self.device, self.engine, keep && self.keeps)
        let period = keeps ? keptPeriod ?? periodFrames : periodFrames
        do {
            capture = try await engine.run { () throws(ALSAError) in
                try ALSACaptureDevice.open(device: device, periodFrames: period, processed: processed || keeps, keeps: keeps, engine: engine)
            }
        } catch {
            failed(error)
            throw error
        }
        // A mute, or another open, may have come while the device opened.
        if muted {
            capture.stop()
            throw ALSAError(function: "snd_pcm_open", code: -EPERM, device: device)
        }
        while current != nil { await shut() }
        current = capture
        last = capture
        watch.works()
        if keeps {
            capture.startKept(onFailure: failure(of: capture))
            bus.notice(.info, "The microphone is kept open while the echo is cancelled; what it hears while nobody listens is dropped.",
                       ["device": device, "period_ms": String(capture.periodFrames * 1000 / max(capture.rate, 1))])
        }
        return capture
    }

    /// Ends the consumer's stream but keeps the device open and reading, for the next `open()`,
    /// whose stream begins with `first` (the consumer's last chunk) and what was heard since.
    /// False when nothing was open or its consumer is a sink (which hands over itself).
    @discardableResult
    public func handOver(startingWith first: [Int16]? = nil) -> Bool {
        current?.detach(keeping: first) ?? false
    }

    /// Closes a device handed over that nobody took (the turn never opened the microphone).
    public func dropHandOver() async {
        if current?.isHandedOver == true { await close() }
    }

    /// The consumer is done: closes the microphone, if open, and returns once the device is released;
    /// a device kept open reads on for the next consumer instead.
    public func close() async {
        if let current, current.keeps, !current.isClosed, keeps {
            current.release()
            return
        }
        await shut()
    }

    /// Closes the device, kept open or not, and returns once it is released.
    private func shut() async {
        guard let capture = current else { return }
        current = nil
        capture.stop()
        await capture.closed()
    }

    /// About `duration` of what the microphone hears, for someone who only listens in (doctor,
    /// the level meter), without taking it from anyone: while a consumer holds it open, a copy of
    /// the consumer's chunks; otherwise the device is opened for this alone, and a consumer's
    /// `open()` takes it over (the stream then ends early). A device that stops giving sound ends
    /// the stream two seconds after it should have ended; a failure ends it with `.failed`.
    /// What the microphone gave, so that a stuck or dead one reads as one whatever the processing
    /// makes of it; or, `processed`, what the processing gives (to measure the echo cancelled).
    public func listenIn(for duration: Duration, processed: Bool = false) async throws(ALSAError) -> AsyncStream<CaptureChunk> {
        let source: AsyncStream<CaptureChunk>
        let owned: ALSACaptureDevice?
        if let current, !current.isClosed {
            source = current.copies(processed: processed)
            owned = nil
        } else {
            // Opened for this alone, and closed after: a listener is no consumer to keep it for.
            source = try await open(periodFrames: 320, processed: processed, keep: false)
            owned = current
        }
        let wanted = Int(duration / .milliseconds(1)) * 16
        let (stream, out) = AsyncStream.makeStream(of: CaptureChunk.self, bufferingPolicy: .bufferingNewest(100))
        let forward = work.start { [weak self] in
            var got = 0
            for await chunk in source {
                out.yield(chunk)
                guard case .samples(let samples) = chunk else { break }
                got += samples.count
                if got >= wanted { break }
            }
            out.finish()
            if let owned { await self?.release(owned) }
        }
        let deadline = work.start {
            guard (try? await Task.sleep(for: duration + .seconds(2))) != nil else { return }
            forward.cancel()
        }
        out.onTermination = { _ in
            forward.cancel()
            deadline.cancel()
        }
        // Once run() has ended (shutdown), nothing is started: the listener is not left waiting.
        if forward.hasEnded { out.finish() }
        return stream
    }

    /// Closes `device` if it is still the one open (a listener in is done with it).
    private func release(_ device: ALSACaptureDevice) async {
        if current === device { await close() }
    }

    /// Opens and closes the device once, to learn whether it works (at start, for status).
    /// While the microphone is open it is known to work and is not opened twice.
    @discardableResult
    public func probe() async -> DeviceHealth {
        if current?.isClosed ?? true, !muted {
            let (device, engine) = (self.device, self.engine)
            do {
                try await engine.run { () throws(ALSAError) in try ALSACaptureDevice.open(device: device, engine: engine).stop() }
                watch.works()
            } catch {
                failed(error)
            }
        }
        return watch.health
    }

    /// Muted: closes the device (returning once it is released) and opens it for nobody, not even a
    /// probe, until unmuted. Unmuted: probes once, so status says whether the microphone works.
    public func setMuted(_ muted: Bool) async {
        self.muted = muted
        if muted {
            watch.stop()
            await shut()
            await last?.closed()
            last = nil
        } else {
            await probe()
        }
    }

    /// Whether a device is kept open now (for the tests).
    var isKeptOpen: Bool { current.map { $0.keeps && !$0.isClosed } ?? false }

    /// The health as last published.
    public var health: DeviceHealth { watch.health }

    private func captureFailed(_ capture: ALSACaptureDevice, _ error: ALSAError) {
        if current === capture { current = nil }
        failed(error)
    }

    private func failed(_ error: ALSAError) {
        watch.failed(error) { [weak self] in
            guard let self else { return true }
            return await self.retryProbe()
        }
    }

    /// One retry: true once the device works again.
    private func retryProbe() async -> Bool {
        if muted { return true }
        return await probe().ok == true
    }
}
