// The daemon's parts and their one owner. Each long-lived part is a Service with
// one `run()`: the runner starts them one after another in the order given (a
// part says when it has started, so the next may rely on it), and stops them in
// the reverse order when SIGTERM or SIGINT comes, or when one of them ends on
// its own, which is a failure: the daemon then stops with a non-zero exit and
// says which part failed. Cancellation is shutdown: a part stops when its task
// is cancelled, doing its own last work (ending the turn, closing the device)
// before `run()` returns. Everything runs as children of one task group, so
// nothing outlives the runner. Stopping has a deadline; when a part overstays
// it, `overstayed` is called with the parts' names (the daemon says so in the
// journal and exits non-zero: a task group cannot return with a child stuck).
import Glibc
import SatelliteCore

/// A long-lived part of the daemon.
public struct Service: Sendable {
    /// How a part is stopped.
    public enum Stop: Sendable {
        /// Its task is cancelled.
        case cancel
        /// It is asked (it then ends of its own accord, draining what it holds); not cancelled.
        case ask(@Sendable () async -> Void)
    }

    public let name: String
    public let stop: Stop
    /// Runs until stopped; calls `started` once the next part may rely on it.
    public let run: @Sendable (_ started: @escaping @Sendable () -> Void) async -> Void

    public init(_ name: String, stop: Stop = .cancel, run: @escaping @Sendable (_ started: @escaping @Sendable () -> Void) async -> Void) {
        self.name = name
        self.stop = stop
        self.run = run
    }

    /// A part that is started as soon as its run begins.
    public init(_ name: String, stop: Stop = .cancel, run: @escaping @Sendable () async -> Void) {
        self.init(name, stop: stop) { started in
            started()
            await run()
        }
    }

    /// Waits until the calling task is cancelled: for parts whose work is all in starting and stopping.
    public static func untilCancelled() async {
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(86_400)) }
    }
}

/// Starts the services, and stops them in reverse.
public struct ServiceRunner: Sendable {
    /// Why the daemon stopped.
    public enum Ending: Sendable, Equatable {
        case signal(Int32)
        /// A part ended on its own.
        case failed(String)
    }

    private let services: [Service]
    private let deadline: Duration
    private let bus: EventBus
    private let overstayed: @Sendable ([String]) -> Never

    public init(_ services: [Service], deadline: Duration, bus: EventBus, overstayed: @escaping @Sendable ([String]) -> Never) {
        self.services = services
        self.deadline = deadline
        self.bus = bus
        self.overstayed = overstayed
    }

    private enum Happening: Sendable {
        case started(Int)
        case ended(Int)
        case signal(Int32)
        case deadline
    }

    /// Runs the services until a signal in `signals`, or until one of them fails.
    public func run(signals: AsyncStream<Int32>) async -> Ending {
        let (happenings, report) = AsyncStream.makeStream(of: Happening.self)
        // One stream per part that is stopped by cancellation: finishing it cancels that part alone.
        var gates: [AsyncStream<Void>.Continuation] = []
        return await withTaskGroup(of: Void.self, returning: Ending.self) { group in
            group.addTask {
                for await signal in signals {
                    report.yield(.signal(signal))
                    break
                }
            }
            var events = happenings.makeAsyncIterator()
            var running: Set<Int> = []
            /// Reads what happens until part `index` says it started (nil), or the daemon is to stop (why).
            func watch(untilStarted index: Int?) async -> Ending? {
                while let event = await events.next() {
                    switch event {
                    case .started(let started) where started == index: return nil
                    case .started, .deadline: continue
                    case .ended(let ended):
                        running.remove(ended)
                        return .failed(services[ended].name)
                    case .signal(let number):
                        return .signal(number)
                    }
                }
                return nil
            }
            var ending: Ending?
            for (index, service) in services.enumerated() {
                let (gate, opener) = AsyncStream.makeStream(of: Void.self)
                gates.append(opener)
                running.insert(index)
                group.addTask {
                    await withTaskGroup(of: Void.self) { part in
                        part.addTask { await service.run { report.yield(.started(index)) } }
                        if case .cancel = service.stop {
                            // Waits for the gate to close, then cancels the part (and not the others).
                            part.addTask { for await _ in gate {} }
                            await part.next()
                            part.cancelAll()
                        }
                        await part.waitForAll()
                    }
                    report.yield(.ended(index))
                }
                // The next part starts once this one says it has.
                ending = await watch(untilStarted: index)
                if ending != nil { break }
            }
            if ending == nil { ending = await watch(untilStarted: nil) }
            switch ending {
            case .failed(let name)?:
                bus.notice(.error, "The \(name) part of the daemon stopped on its own; the daemon shuts down so that systemd starts it afresh.",
                           ["part": name])
            case .signal(let number)?:
                bus.notice(.notice, "Shutting down on \(number == SIGTERM ? "SIGTERM" : "SIGINT").")
            case nil:
                break
            }
            let deadline = self.deadline
            group.addTask {
                try? await Task.sleep(for: deadline)
                report.yield(.deadline)
            }
            stopping: for index in running.sorted(by: >) {
                switch services[index].stop {
                case .cancel: gates[index].finish()
                // Asked in a task of its own, so that a stop that never returns still meets the deadline below.
                case .ask(let stop): group.addTask { await stop() }
                }
                while let event = await events.next() {
                    switch event {
                    case .ended(let ended):
                        running.remove(ended)
                        if ended == index { continue stopping }
                    case .deadline:
                        overstayed(running.sorted().map { services[$0].name })
                    case .started, .signal:
                        continue
                    }
                }
            }
            group.cancelAll()
            return ending ?? .signal(SIGTERM)
        }
    }
}
