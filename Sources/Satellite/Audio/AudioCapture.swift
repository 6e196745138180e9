// The one owner of the microphone. It opens the device only while someone
// consumes its frames (the record transport opens it per utterance), reports
// the microphone's health on the bus when it changes, and while the device is
// broken probes it with back-off. Frames go to the one consumer, never the bus.
import SatelliteCore

/// Owns the capture device: opens it for one consumer at a time and watches its health.
public actor AudioCapture {
    public let device: String
    private let bus: EventBus
    private var watch: DeviceWatch
    private var current: ALSACaptureDevice?

    /// `retry` is the back-off between probes of a broken device.
    public init(device: String, bus: EventBus, retry: Backoff = Backoff(first: .seconds(1), cap: .seconds(30))) {
        self.device = device
        self.bus = bus
        self.watch = DeviceWatch(device: device, bus: bus, backoff: retry, event: SatelliteEvent.microphone)
    }

    deinit { watch.stop() }

    /// Opens the microphone and returns the stream of its chunks for the one consumer.
    /// A stream already open is closed first. The device closes when the consumer
    /// stops iterating, on `close()`, or after a `.failed` chunk (then retries begin).
    /// `periodFrames` is the chunk ALSA is asked for: each one is a wake-up of the capture
    /// thread and a hop to the consumer, so a consumer that judges longer stretches asks for longer.
    public func open(periodFrames: Int = 320) async throws(ALSAError) -> AsyncStream<CaptureChunk> {
        // Another open may slip in while this one waits for the old device to close.
        while current != nil { await close() }
        let capture: ALSACaptureDevice
        do {
            capture = try ALSACaptureDevice.open(device: device, periodFrames: periodFrames)
        } catch {
            failed(error)
            throw error
        }
        current = capture
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
        if current == nil {
            do {
                try ALSACaptureDevice.open(device: device).stop()
                watch.works()
            } catch {
                failed(error)
            }
        }
        return watch.health
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
        probe().ok == true
    }
}
