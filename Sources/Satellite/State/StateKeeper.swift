// Holds the facts the satellite's state is derived from, and publishes a state
// event whenever the derived state changes. Any actor may report a fact; the
// lock keeps the order of state events the order of the facts.
import Synchronization
import SatelliteCore

/// The one place the satellite's state changes.
public final class StateKeeper: Sendable {
    private let inputs = Mutex(StateInputs())
    private let bus: EventBus

    public init(bus: EventBus) {
        self.bus = bus
    }

    public var state: SatelliteState { inputs.withLock { $0.state } }

    /// Changes the facts; publishes `.state` if the derived state moved.
    public func update(_ change: (inout StateInputs) -> Void) {
        inputs.withLock { facts in
            let before = facts.state
            change(&facts)
            let after = facts.state
            if after != before { bus.publish(.state(after, previous: before)) }
        }
    }
}
