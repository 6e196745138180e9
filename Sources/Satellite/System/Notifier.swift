// Tells systemd how the satellite is: READY=1 once the control socket accepts,
// STATUS= a plain sentence for each state, STOPPING=1 on shutdown (WATCHDOG=1 is
// the Watchdog's). Sent from a thread of its own, so a manager that stops
// reading stops nothing else.
import CSystemd
import SatelliteCore

/// sd_notify for the daemon. Without NOTIFY_SOCKET every call does nothing.
public struct Notifier: Sendable {
    /// The messages waiting for the notify thread: a manager that stops reading (sd_notify then
    /// blocks) holds up that thread alone, never the main loop.
    private let backlog = Backlog(limit: 100)

    public init() {}

    /// Sends `message` on `BlockingThread.notify`, in order; dropped when 100 wait already.
    public func send(_ message: String) {
        guard backlog.admit() else { return }
        BlockingThread.notify.submit { [backlog] in
            _ = sd_notify(0, message)
            _ = backlog.written()
        }
    }

    public func ready(status: String) { send("READY=1\nSTATUS=\(status)") }
    public func status(_ sentence: String) { send("STATUS=\(sentence)") }
    public func stopping() { send("STOPPING=1\nSTATUS=Shutting down.") }

    /// Sends STATUS= for every state change until the stream ends; returns once all sent has gone.
    public func run(_ events: AsyncStream<SatelliteEvent>, room: String) async {
        var room = room
        var state = SatelliteState.starting
        for await event in events {
            switch event {
            case .state(let s, _): state = s
            case .room(let r): room = r
            default: continue
            }
            status(state.sentence(room: room))
        }
        // Ends after the other parts stopped (the journal's service): STOPPING=1 and every line before
        // it leave before the daemon exits.
        await BlockingThread.notify.run {}
    }

    /// The watchdog interval systemd asked for, if any.
    public var watchdogInterval: Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0, usec > 0 else { return nil }
        // systemd takes any count short of UInt64.max (its "infinity"); past Int64's it is for ever all the same.
        return .microseconds(Int64(clamping: usec))
    }
}
