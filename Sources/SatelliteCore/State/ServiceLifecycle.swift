// When the daemon's parts start and stop, whatever order they end in: the pure
// half of ServiceRunner. Parts are numbered in the order they start. One starts
// only once the one before it said it has; a part that ends on its own before
// shutdown is a failure, and a signal or a failure begins shutdown. Shutdown
// stops the parts still running one at a time, the last started first, and
// waits for each; a part that ends on its own meanwhile is only crossed off, and
// one that ended is never asked to stop. The deadline names the parts still
// running, whichever they are.
public struct ServiceLifecycle: Sendable, Equatable {
    public enum Event: Sendable, Equatable {
        /// The part said the next may rely on it.
        case started(Int)
        /// The part's run returned.
        case ended(Int)
        case signal(Int32)
        /// Stopping has taken too long.
        case deadline
    }

    /// Why the parts stop.
    public enum Ending: Sendable, Equatable {
        case signal(Int32)
        /// The part ended on its own before shutdown.
        case failed(Int)
    }

    public enum Action: Sendable, Equatable {
        case start(Int)
        case stop(Int)
        /// Shutdown begins: say why, and set the deadline.
        case shutDown(Ending)
        /// The deadline passed with these parts still running (in the order they started).
        case overstayed([Int])
        /// Every part that was started has ended.
        case finished(Ending)
    }

    private enum Phase: Sendable, Equatable {
        /// The part is started, and the next waits for it to say so.
        case starting(Int)
        case running
        /// The part asked to stop, whose end is awaited (nil once all have ended).
        case stopping(Ending, asked: Int?)
    }

    private let count: Int
    private var phase: Phase
    /// Started and not yet ended.
    private var running: Set<Int> = []

    public init(count: Int) {
        self.count = count
        phase = .running
    }

    /// The first part's start (none when there are no parts: then only a signal ends the run).
    public mutating func start() -> [Action] {
        guard count > 0 else { return [] }
        return launch(0)
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch (phase, event) {
        case (.starting(let index), .started(let started)) where started == index:
            if index + 1 < count { return launch(index + 1) }
            phase = .running
            return []
        case (.starting, .ended(let index)), (.running, .ended(let index)):
            running.remove(index)
            return shutDown(.failed(index))
        case (.starting, .signal(let number)), (.running, .signal(let number)):
            return shutDown(.signal(number))
        case (.stopping(let ending, let asked), .ended(let index)):
            running.remove(index)
            return index == asked ? stopNext(ending) : []
        case (.stopping(_, asked: .some), .deadline):
            return [.overstayed(running.sorted())]
        default:
            // A second signal or failure while stopping, a part's late word that it started, a deadline not set.
            return []
        }
    }

    private mutating func launch(_ index: Int) -> [Action] {
        running.insert(index)
        phase = .starting(index)
        return [.start(index)]
    }

    private mutating func shutDown(_ ending: Ending) -> [Action] {
        [.shutDown(ending)] + stopNext(ending)
    }

    /// Asks the last started of the parts still running to stop; or says all have ended.
    private mutating func stopNext(_ ending: Ending) -> [Action] {
        guard let last = running.max() else {
            phase = .stopping(ending, asked: nil)
            return [.finished(ending)]
        }
        phase = .stopping(ending, asked: last)
        return [.stop(last)]
    }
}
