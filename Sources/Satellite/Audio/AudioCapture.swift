// The one owner of the microphone. It opens the device only while someone
// consumes its frames (the record transport opens it per utterance), reports
// the microphone's health on the bus when it changes, and while the device is
// broken probes it with back-off. Frames go to the one consumer, never the bus.
// Muted, it does not open the device at all, not even to probe it: the device
// is released so that another program may have it.
import Glibc
import SatelliteCore

/// Owns the capture device: opens it for one consumer at a time and watches its health.
public actor AudioCapture {
    public let device: String
    private let bus: EventBus
    private var watch: DeviceWatch
    private var current: ALSACaptureDevice?
    /// The device opened last, open or not: a mute waits until even one being closed is released.
    private var last: ALSACaptureDevice?
    private var muted: Bool

    /// `retry` is the back-off between probes of a broken device.
    public init(device: String, bus: EventBus, retry: Backoff = Backoff(first: .seconds(1), cap: .seconds(30)),
                muted: Bool = false) {
        self.device = device
        self.muted = muted
        self.bus = bus
        self.watch = DeviceWatch(device: device, bus: bus, backoff: retry, event: SatelliteEvent.microphone)
    }

    deinit { watch.stop() }

    /// Opens the microphone and returns the stream of its chunks for the one consumer.
    /// A stream already open is closed first. The device closes when the consumer
    /// stops iterating, on `close()`, or after a `.failed` chunk (then retries begin).
    public func open() async throws(ALSAError) -> AsyncStream<CaptureChunk> {
        // Another open may slip in while this one waits for the old device to close.
        while current != nil { await close() }
        // Callers do not ask while muted; one that raced a mute is refused without a word on the bus.
        if muted { throw ALSAError(function: "snd_pcm_open", code: -EPERM, device: device) }
        let capture: ALSACaptureDevice
        do {
            capture = try ALSACaptureDevice.open(device: device)
        } catch {
            failed(error)
            throw error
        }
        current = capture
        last = capture
        watch.works()
        return capture.frames { [weak self] error in
            Task { await self?.captureFailed(capture, error) }
        }
    }

    /// Closes the microphone, if open, and returns once the device is released.
    public func close() async {
        guard let capture = current else { return }
        current = nil
        capture.stop()
        await capture.closed()
    }

    /// Opens and closes the device once, to learn whether it works (at start, for status).
    /// While the microphone is open it is known to work and is not opened twice.
    @discardableResult
    public func probe() -> DeviceHealth {
        if current == nil && !muted {
            do {
                try ALSACaptureDevice.open(device: device).stop()
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
            await close()
            await last?.closed()
            last = nil
        } else {
            probe()
        }
    }

    /// Answers the watchdog: the actor is not stuck.
    public func ping() -> Bool { true }

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
    private func retryProbe() -> Bool {
        muted || probe().ok == true
    }
}
