// The health of the microphone or the speaker as last published, and the one
// retry loop that runs while it is broken. Shared by AudioCapture and Playback
// so both publish only on a change and both retry by the same back-off rule;
// a broken device must never be probed in a busy loop. The retry is a child of
// its owner's `run()` (the owner's WorkGroup), so shutdown ends it.
import SatelliteCore

/// Publishes a device's health when it changes, and keeps at most one retry running.
struct DeviceWatch {
    private(set) var health: DeviceHealth
    private let bus: EventBus
    private let event: @Sendable (DeviceHealth) -> SatelliteEvent
    private let backoff: Backoff
    private let work: WorkGroup
    private var retry: WorkGroup.Handle?

    /// `work` is the owner's: the retry loop runs as a child of the owner's `run()`.
    init(device: String, bus: EventBus, backoff: Backoff, work: WorkGroup, event: @escaping @Sendable (DeviceHealth) -> SatelliteEvent) {
        self.health = DeviceHealth(device: device)
        self.bus = bus
        self.backoff = backoff
        self.work = work
        self.event = event
    }

    /// The device opened: say so if it was not known to work, and stop retrying.
    mutating func works() {
        retry?.cancel()
        retry = nil
        publish(DeviceHealth(device: health.device, ok: true))
    }

    /// The device failed: say so once, and start the retry loop unless one runs.
    /// `probe` returns true once the device opens again (and calls `works()`), or
    /// when there is nothing left to retry for.
    mutating func failed(_ error: ALSAError, probe: @escaping @Sendable () async -> Bool) {
        publish(DeviceHealth(device: health.device, ok: false, error: error.reason))
        guard retry == nil else { return }
        retry = work.start { [backoff] in
            var backoff = backoff
            while !Task.isCancelled {
                try? await Task.sleep(for: backoff.next())
                if Task.isCancelled { return }
                if await probe() { return }
            }
        }
    }

    /// True while a retry loop runs.
    var isRetrying: Bool { retry != nil }

    /// Stops the retry loop (the owner is going away).
    mutating func stop() {
        retry?.cancel()
        retry = nil
    }

    private mutating func publish(_ new: DeviceHealth) {
        guard new != health else { return }
        health = new
        bus.publish(event(new))
    }
}
