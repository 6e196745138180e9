// The daemon's parts and their one owner. Each long-lived part is a Service with
// one `run()`: the runner starts them one after another in the order given (a
// part says when it has started, so the next may rely on it), and stops them in
// the reverse order when SIGTERM or SIGINT comes, or when one of them ends on
// its own, which is a failure: the daemon then stops with a non-zero exit and
// says which part failed. Cancellation is shutdown: a part stops when its task
// is cancelled, doing its own last work (ending the turn, closing the device)
// before `run()` returns. Everything runs as children of one task group, so
// nothing outlives the runner. When each part starts and stops, whatever order
// they end in, is ServiceLifecycle's to say; the runner does what it says.
// Stopping has a deadline; when a part overstays it, `overstayed` is called with
// the names of the parts still running (the daemon says so in the journal and
// exits non-zero: a task group cannot return with a child stuck).
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
    private let overstayed: @Sendable ([String]) -> Void

    /// `overstayed` is called once, at the deadline, with the names of the parts still running; the
    /// daemon ends there. (Should it return, stopping goes on, and the runner returns once all have ended.)
    public init(_ services: [Service], deadline: Duration, bus: EventBus, overstayed: @escaping @Sendable ([String]) -> Void) {
        self.services = services
        self.deadline = deadline
        self.bus = bus
        self.overstayed = overstayed
    }

    /// Runs the services until a signal in `signals`, or until one of them fails.
    public func run(signals: AsyncStream<Int32>) async -> Ending {
        let (happenings, report) = AsyncStream.makeStream(of: ServiceLifecycle.Event.self)
        // One stream per part that is stopped by cancellation: finishing it cancels that part alone.
        var gates: [Int: AsyncStream<Void>.Continuation] = [:]
        return await withTaskGroup(of: Void.self, returning: Ending.self) { group in
            group.addTask {
                for await signal in signals {
                    report.yield(.signal(signal))
                    break
                }
            }
            var lifecycle = ServiceLifecycle(count: services.count)
            var actions = lifecycle.start()
            var events = happenings.makeAsyncIterator()
            while true {
                for action in actions {
                    switch action {
                    case .start(let index):
                        let service = services[index]
                        let (gate, opener) = AsyncStream.makeStream(of: Void.self)
                        gates[index] = opener
                        group.addTask { await Self.run(service, index, gate: gate, report: report) }
                    case .stop(let index):
                        switch services[index].stop {
                        case .cancel: gates[index]?.finish()
                        // Asked in a task of its own, so that a stop that never returns still meets the deadline.
                        case .ask(let stop): group.addTask { await stop() }
                        }
                    case .shutDown(let ending):
                        switch ending {
                        case .failed(let index):
                            let name = services[index].name
                            bus.notice(.error, "The \(name) part of the daemon stopped on its own; the daemon shuts down so that systemd starts it afresh.",
                                       ["part": name])
                        case .signal(let number):
                            bus.notice(.notice, "Shutting down on \(number == SIGTERM ? "SIGTERM" : "SIGINT").")
                        }
                        let deadline = self.deadline
                        group.addTask {
                            try? await Task.sleep(for: deadline)
                            report.yield(.deadline)
                        }
                    case .overstayed(let parts):
                        overstayed(parts.map { services[$0].name })
                    case .finished(let ending):
                        // The signals' reader and the deadline's sleep.
                        group.cancelAll()
                        switch ending {
                        case .failed(let index): return .failed(services[index].name)
                        case .signal(let number): return .signal(number)
                        }
                    }
                }
                guard let event = await events.next() else {
                    // Only when the runner's own task is cancelled, which cancels every part too: the group waits for them.
                    group.cancelAll()
                    return .signal(SIGTERM)
                }
                actions = lifecycle.handle(event)
            }
        }
    }

    /// Runs part `index` until it ends, on its own or (one stopped by cancelling) once `gate` closes.
    private static func run(_ service: Service, _ index: Int, gate: AsyncStream<Void>,
                            report: AsyncStream<ServiceLifecycle.Event>.Continuation) async {
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
}
