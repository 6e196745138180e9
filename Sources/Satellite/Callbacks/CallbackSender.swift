// Hands a request's result to the caller's callback URL (docs/callbacks.md).
// The daemon itself does it, so the result arrives even when the caller has
// gone. Each delivery runs as a child of `run()` (its HTTP on HTTPLoop's thread),
// so it never holds up the voice path or the result to a caller still
// connected, and `shutdown` ends them all before `run()` returns. Easy to get wrong: the request carries no Authorization header and
// no token (HTTPClient adds no header it is not given, and follows no
// redirect), and the journal shows the URL without its query, where the
// caller's own, perhaps private, context is.
import Synchronization
import SatelliteCore

/// Delivers results to callback URLs with bounded retries, and journals every try.
public final class CallbackSender: Sendable {
    /// A request whose result will go to a callback: still running, or being delivered.
    private enum Entry {
        case running(Ticket)
        case delivering(WorkGroup.Handle)
    }
    private struct State {
        var next = 0
        var entries: [Int: Entry] = [:]
        var closed = false
    }

    /// A request registered with `expect`, handed back to `deliver` when it ends.
    public struct Ticket: Sendable {
        fileprivate let key: Int
        public let url: CallbackURL
        public let command: String
    }

    private let http: HTTPClient
    private let bus: EventBus
    private let state = Mutex(State())
    /// The deliveries: children of `run()`.
    private let work = WorkGroup()
    /// Yields whenever an entry goes, so shutdown can wait for the last one.
    private let changes: AsyncStream<Void>
    private let changed: AsyncStream<Void>.Continuation

    /// A receiver's answer body is not read for anything, so a small limit will do.
    public init(bus: EventBus, http: HTTPClient = HTTPClient(bodyLimit: 64 << 10)) {
        self.http = http
        self.bus = bus
        (changes, changed) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Registers a request that has started, so that shutdown waits for its result too.
    public func expect(_ url: CallbackURL, command: String) -> Ticket {
        let (ticket, closed) = state.withLock { s in
            s.next += 1
            let ticket = Ticket(key: s.next, url: url, command: command)
            if !s.closed { s.entries[ticket.key] = .running(ticket) }
            return (ticket, s.closed)
        }
        if closed { bus.notice(.warning, "Callback dropped at shutdown.", ["callback_url": url.display, "command": command]) }
        return ticket
    }

    /// Sends `result` for `ticket` in a task of its own and returns at once. Does nothing
    /// when shutdown has already answered the ticket.
    public func deliver(_ result: ControlResult, for ticket: Ticket) {
        state.withLock { s in
            guard case .running? = s.entries[ticket.key] else { return }
            s.entries[ticket.key] = .delivering(work.start { [self] in
                await send(result, for: ticket, attempts: CallbackPolicy.attempts)
                remove(ticket.key)
            })
        }
    }

    /// Runs the deliveries, until `shutdown` has ended the last.
    public func run() async {
        await work.run()
    }

    /// Waits up to `CallbackPolicy.shutdownGrace` for every callback; then a request that has
    /// still not ended is reported `cancelled` / `shutting_down` in one quick try, and a delivery
    /// still trying is stopped, with a journal line.
    public func shutdown() async {
        if !isEmpty {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [self] in
                    for await _ in changes where isEmpty { return }
                }
                group.addTask { try? await Task.sleep(for: CallbackPolicy.shutdownGrace) }
                await group.next()
                group.cancelAll()
            }
        }
        let left = state.withLock { s in
            s.closed = true
            defer { s.entries.removeAll() }
            return Array(s.entries.values)
        }
        var last: [WorkGroup.Handle] = []
        for entry in left {
            switch entry {
            case .delivering(let delivery):
                delivery.cancel()
                last.append(delivery)
            case .running(let ticket):
                last.append(work.start { [self] in
                    await send(.cancelled(.shuttingDown), for: ticket, attempts: 1, timeout: .seconds(2))
                })
            }
        }
        for delivery in last { await delivery.wait() }
        changed.finish()
        work.finish()
    }

    private var isEmpty: Bool { state.withLock { $0.entries.isEmpty } }

    private func remove(_ key: Int) {
        state.withLock { _ = $0.entries.removeValue(forKey: key) }
        changed.yield()
    }

    /// Tries up to `attempts` times, waiting 1 s, 2 s, 4 s between tries; journals each try.
    private func send(_ result: ControlResult, for ticket: Ticket, attempts: Int,
                      timeout: Duration = CallbackPolicy.totalTimeout) async {
        let request = HTTPRequest(
            method: "GET", url: ticket.url.url(reporting: result),
            headers: [("User-Agent", "parlour-satellite/\(SatelliteVersion.satellite)")],
            connectTimeout: min(CallbackPolicy.connectTimeout, timeout), totalTimeout: timeout)
        var fields = ["callback_url": ticket.url.display, "command": ticket.command,
                      "result": result.json["status"]?.stringValue ?? "", "attempts": String(attempts)]
        var backoff = CallbackPolicy.backoff
        for attempt in 1...attempts {
            fields["attempt"] = String(attempt)
            if attempt > 1 {
                guard (try? await Task.sleep(for: backoff.next())) != nil else {
                    bus.notice(.warning, "Callback dropped at shutdown.", fields)
                    return
                }
            }
            let verdict: CallbackPolicy.Verdict
            do {
                let response = try await http.send(request)
                verdict = CallbackPolicy.verdict(status: response.status)
                fields["outcome"] = "HTTP \(response.status)"
            } catch {
                if error.kind == .cancelled {
                    bus.notice(.warning, "Callback dropped at shutdown.", fields)
                    return
                }
                verdict = .retry
                fields["outcome"] = error.detail
            }
            switch verdict {
            case .delivered:
                bus.notice(.info, "Callback delivered.", fields)
                return
            case .refused:
                bus.notice(.warning, "Callback refused by its receiver; not tried again.", fields)
                return
            case .retry where attempt < attempts:
                bus.notice(.notice, "Callback attempt failed; trying again.", fields)
            case .retry:
                bus.notice(.warning, "Callback not delivered: every attempt failed.", fields)
            }
        }
    }
}
