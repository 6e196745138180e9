// Every HTTP exchange of the daemon on one thread, `http`: one poll over the
// exchanges' connections and a pipe that wakes it when a request comes or is
// cancelled; asleep while there is nothing to do. Connections are kept for
// the next request of the same pool (HTTPExchange.pool: the client, scheme,
// host, port, pinned addresses, pinned key, verification), so a connection
// made to one address, or checked against one key, never carries a request
// pinned to another, and a callback's connection never carries the token. A
// key wanted from the handshake takes a new connection, kept by nobody after.
// The TLS contexts are made here on first use (loading the CA store takes tens
// of milliseconds; this thread is HTTP's alone), and only for an https server.
import Glibc
import SatelliteCore
import Synchronization

/// The exchanges' thread. Started with the first request.
final class HTTPLoop: @unchecked Sendable {
    static let shared = HTTPLoop()

    private enum Command {
        case add(HTTPExchange)
        case cancel(HTTPExchange)
        /// The client is gone: its idle connections close.
        case forget(String)
    }

    /// A connection kept for its pool's next request.
    private struct Idle {
        let connection: ClientConnection
        let pool: String
        let client: String
        let since: UInt64
    }

    /// An idle connection older than this is closed rather than reused (curl's CURLOPT_MAXAGE_CONN, 118 s, kept).
    private static let idleLimit = Duration.seconds(118)
    /// Past this many idle connections of one client, its oldest close (callbacks may name any host).
    private static let idleLimitPerClient = 8

    private let inbox = Mutex<(commands: [Command], started: Bool)>(([], false))
    /// A byte written wakes the thread.
    private let wakePipe: WakePipe

    // The loop's thread's alone.
    private var running: [HTTPExchange] = []
    private var idle: [Idle] = []
    /// The TLS contexts, checking the chain (true) or not, made on first use.
    private var contexts: [Bool: OpaquePointer] = [:]

    private init() {
        guard let pipe = WakePipe() else { preconditionFailure("pipe failed: \(errno)") }
        wakePipe = pipe
    }

    /// Starts `exchange`; it completes on the loop's thread. Any thread.
    func add(_ exchange: HTTPExchange) { submit(.add(exchange)) }

    /// Stops `exchange` if it still runs: it completes as cancelled. Any thread.
    func cancel(_ exchange: HTTPExchange) { submit(.cancel(exchange)) }

    /// Closes the idle connections of `client`, which sends no more. Any thread.
    func forget(_ client: String) { submit(.forget(client)) }

    private func submit(_ command: Command) {
        let start = inbox.withLock { state in
            state.commands.append(command)
            defer { state.started = true }
            return !state.started
        }
        if !start {
            wakePipe.wake()
        } else if !SystemThread.start(name: "http", { [self] in run() }) {
            // No thread to be had is an answer too, never a continuation left waiting.
            inbox.withLock { $0.started = false }
            for case .add(let exchange) in take() {
                exchange.complete(.failure(HTTPFailure(kind: .other, function: "pthread_create", code: 0,
                                                       detail: "no thread could be started for HTTP", method: exchange.request.method,
                                                       url: ServerAnswers.displayURL(exchange.request.url))))
            }
        }
    }

    /// The commands submitted since the last take, in order.
    private func take() -> [Command] {
        inbox.withLock { state in
            defer { state.commands = [] }
            return state.commands
        }
    }

    private func run() {
        var fds: [pollfd] = []
        var polled: [Int] = []
        let heartbeat = Heartbeat("http", serves: "every HTTP request", bound: .seconds(10)) { [wakePipe] in wakePipe.wake() }
        while true {
            wakePipe.drain()
            let now = MonotonicClock.nanoseconds()
            for command in take() {
                switch command {
                case .add(let exchange): start(exchange, now)
                case .cancel(let exchange):
                    if running.contains(where: { $0 === exchange }) { exchange.cancel() }
                case .forget(let client): closeIdle { $0.client == client }
                }
            }
            settle()
            closeIdle { now >= $0.since + MonotonicClock.nanoseconds(in: Self.idleLimit) }

            fds.removeAll(keepingCapacity: true)
            polled.removeAll(keepingCapacity: true)
            fds.append(wakePipe.pollRequest)
            var deadline = idle.map { $0.since + MonotonicClock.nanoseconds(in: Self.idleLimit) }.min() ?? .max
            for (index, exchange) in running.enumerated() {
                deadline = min(deadline, exchange.deadline)
                if let request = exchange.pollRequest {
                    fds.append(request)
                    polled.append(index)
                }
            }
            // Nothing due: asleep until the pipe wakes it.
            let timeout = deadline == .max ? -1 : MonotonicClock.pollTimeout(until: deadline, from: MonotonicClock.nanoseconds())
            _ = heartbeat.sleeping(timeout: timeout) { poll(&fds, nfds_t(fds.count), timeout) }
            let after = MonotonicClock.nanoseconds()
            var events = [Int16](repeating: 0, count: running.count)
            for (slot, index) in polled.enumerated() { events[index] = fds[slot + 1].revents }
            for (index, exchange) in running.enumerated() { _ = exchange.service(events: events[index], now: after) }
            settle()
        }
    }

    private func start(_ exchange: HTTPExchange, _ now: UInt64) {
        if exchange.cancelled.load(ordering: .relaxed) {
            exchange.cancel()
            return
        }
        // The newest idle connection of the pool still open; the ones found closed go.
        var reuse: ClientConnection?
        if exchange.mayReuse {
            while reuse == nil, let at = idle.lastIndex(where: { $0.pool == exchange.pool }) {
                let found = idle.remove(at: at).connection
                if found.isIdleAndOpen { reuse = found } else { found.close(clean: false) }
            }
        }
        running.append(exchange)
        exchange.start(now, idle: reuse) { (verifying) throws(ClientConnection.Failure) -> OpaquePointer in
            if let made = contexts[verifying] { return made }
            let made = try ClientConnection.tlsContext(verifying: verifying)
            contexts[verifying] = made
            return made
        }
    }

    /// Lets the finished exchanges go, keeping their connections where they may carry another request.
    private func settle() {
        let now = MonotonicClock.nanoseconds()
        for exchange in running where exchange.isFinished {
            if let connection = exchange.takeConnection() {
                idle.append(Idle(connection: connection, pool: exchange.pool, client: exchange.client, since: now))
                let own = idle.indices.filter { idle[$0].client == exchange.client }
                for index in own.prefix(max(0, own.count - Self.idleLimitPerClient)).reversed() {
                    idle.remove(at: index).connection.close(clean: true)
                }
            }
        }
        running.removeAll { $0.isFinished }
    }

    private func closeIdle(where condition: (Idle) -> Bool) {
        for kept in idle where condition(kept) { kept.connection.close(clean: true) }
        idle.removeAll(where: condition)
    }
}
