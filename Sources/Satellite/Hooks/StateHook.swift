// Runs `hooks.onState` on every state change, beside the voice path and never
// in it: it is a subscriber of the event bus like the journal, so a hook that
// is slow or hangs delays nothing but the next hook. At most one hook runs at
// a time; while one runs, only the newest state waits (a stream that buffers
// one change), so states that come faster than the hook runs are skipped and
// the hook always ends up told where things stand. A hook that outlives
// `hooks.timeoutMs` gets SIGTERM, and SIGKILL 2 s later, with its whole
// process group. How each run ended goes to the journal.
import Glibc
import SatelliteCore

/// The state hook's runner.
public actor StateHook {
    public struct Settings: Sendable {
        public var command: HookCommand
        public var timeout: Duration
        /// The daemon's environment, from which the hook's is made (StateChange.environment).
        public var environment: [String: String]
        /// The control socket, for a hook that calls parlourctl.
        public var socket: String
        public var room: String

        public init(command: HookCommand, timeout: Duration, environment: [String: String], socket: String, room: String) {
            self.command = command
            self.timeout = timeout
            self.environment = environment
            self.socket = socket
            self.room = room
        }
    }

    /// From SIGTERM to SIGKILL, for a hook that does not end when asked.
    static let grace: Duration = .seconds(2)

    private let settings: Settings
    private let bus: EventBus
    private let events: AsyncStream<SatelliteEvent>
    /// The last failure to start the hook, so the same one is said once.
    private var lastFailure: String?

    /// Subscribes at once, so the first state change (starting → …) is not missed.
    public init(settings: Settings, bus: EventBus) {
        self.settings = settings
        self.bus = bus
        self.events = bus.subscribe(bufferingNewest: 1024)
    }

    /// Runs the hook for each state change until cancelled; a hook running then is stopped.
    public func run() async {
        let (latest, newest) = AsyncStream.makeStream(of: StateChange.self, bufferingPolicy: .bufferingNewest(1))
        async let forwarding: Void = { [events, room = settings.room] in
            var room = room
            var serverName: String?
            for await event in events {
                switch event {
                case .room(let value): room = value
                case .server(let server): serverName = server.name
                case .state(let state, let previous):
                    newest.yield(StateChange(state: state, previous: previous, room: room, serverName: serverName, at: .now()))
                default: break
                }
            }
            newest.finish()
        }()
        for await change in latest {
            await run(for: change)
        }
        await forwarding
    }

    private func run(for change: StateChange) async {
        let started = ContinuousClock.now
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(
                executable: settings.command.executable, arguments: settings.command.arguments,
                environment: change.environment(inheriting: settings.environment, socket: settings.socket),
                input: Array((change.json.text + "\n").utf8))
        } catch {
            let message = "The state hook could not be started: \(error.description)."
            bus.notice(lastFailure == message ? .debug : .error, message,
                       ["hook": settings.command.executable, "hookState": change.state.rawValue])
            lastFailure = message
            return
        }
        lastFailure = nil
        let limit = settings.timeout
        // The timer is a child of this call: it ends with the hook.
        let (exit, timedOut) = await withTaskGroup(of: Bool?.self) { group -> (ChildExit, Bool) in
            group.addTask {
                guard (try? await Task.sleep(for: limit)) != nil else { return nil }
                child.stop(grace: Self.grace)
                return true
            }
            let exit = await withTaskCancellationHandler {
                await child.exited()
            } onCancel: {
                child.stop(grace: Self.grace)
            }
            group.cancelAll()
            return (exit, await group.next() == true)
        }
        report(exit, timedOut: timedOut, change: change, took: ContinuousClock.now - started)
    }

    private func report(_ exit: ChildExit, timedOut: Bool, change: StateChange, took: Duration) {
        var fields = ["hook": settings.command.executable, "hookState": change.state.rawValue, "ms": String(Self.milliseconds(took))]
        switch exit {
        case .exited(let status): fields["exitStatus"] = String(status)
        case .signalled(let signal): fields["signal"] = String(signal)
        }
        if timedOut {
            let how = exit == .signalled(SIGKILL) ? "SIGKILL" : "SIGTERM"
            bus.notice(.warning, "The state hook ran longer than hooks.timeoutMs (\(Self.milliseconds(settings.timeout)) ms)"
                + " and was stopped with \(how).", fields)
            return
        }
        switch exit {
        case .exited(0):
            bus.notice(.debug, "The state hook ran.", fields)
        case .exited(let status):
            bus.notice(.warning, "The state hook exited with status \(status).", fields)
        case .signalled(let signal):
            bus.notice(.warning, "The state hook was ended by signal \(signal).", fields)
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }
}
