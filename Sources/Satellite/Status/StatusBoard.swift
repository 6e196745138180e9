// What `parlourctl status` reads: the StatusModel folded from the bus as a
// synchronous tap, so it is current the moment an event is published.
import Synchronization
import SatelliteCore

/// The current status, kept up to date from the event bus.
public final class StatusBoard: Sendable {
    private let model: Mutex<StatusModel>

    public init(_ initial: StatusModel) {
        model = Mutex(initial)
    }

    /// The tap to give the EventBus.
    public var tap: @Sendable (SatelliteEvent) -> Void {
        { [self] event in model.withLock { $0.apply(event) } }
    }

    public var current: StatusModel { model.withLock { $0 } }

    /// For facts that are not events (whether Bonjour works).
    public func update(_ change: (inout StatusModel) -> Void) { model.withLock { change(&$0) } }
}
