// Every HTTP transfer of the daemon on one thread, `http`: libcurl's multi
// interface, curl_multi_poll on the transfers' sockets and curl_multi_wakeup
// when a request comes or is cancelled; asleep while nothing runs. A
// connection to a server is kept for the next request of its pool (curl
// reuses none idle past 118 s, CURLOPT_MAXAGE_CONN).
//
// Easy to get wrong: a reused connection must be one the request could have
// made itself. Each pool (HTTPTransfer.pool: the client, scheme, host, port,
// pinned addresses, pinned key, verification) has a curl share of its own
// (CURL_LOCK_DATA_CONNECT and _DNS), so a connection made to one address, or
// checked against one key, never carries a request pinned to another, and a
// callback's connection never carries the token. A key wanted from the
// handshake takes a fresh connection (HTTPTransfer). The shares have no lock:
// only this thread touches them.
import CCurl
import Glibc
import SatelliteCore
import Synchronization

/// The multi handle and the thread that drives it. Started with the first request.
final class HTTPLoop: @unchecked Sendable {
    static let shared = HTTPLoop()

    private enum Command {
        case add(HTTPTransfer)
        case cancel(HTTPTransfer)
        /// The client is gone: its idle pools close.
        case forget(String)
    }

    /// A share, whose client it is, how many transfers use it now, and since when none has.
    private final class Pool {
        let share: UnsafeMutableRawPointer
        let client: String
        var using = 0
        var lastUsed = 0
        var idleSince: UInt64 = 0

        init(share: UnsafeMutableRawPointer, client: String) {
            self.share = share
            self.client = client
        }
    }

    /// A pool idle this long goes with its connections: curl reuses none older (CURLOPT_MAXAGE_CONN, 118 s).
    private static let idleLimit = Duration.seconds(120)
    /// Past this many pools of one client, its idle ones least lately used go too (callbacks may name any host).
    private static let poolLimit = 8

    private let inbox = Mutex<(commands: [Command], started: Bool)>(([], false))
    /// Made on the first request, with curl_global_init, which is not safe to race with itself.
    private let multi = Mutex<UnsafeMutableRawPointer?>(nil)

    // Touched by the loop's thread alone.
    /// The `http` thread's alone, as curl's handles are: checked in debug builds.
    private let owner = OwnerThread("http")
    private var running: [UnsafeMutableRawPointer: HTTPTransfer] = [:]
    private var pools: [String: Pool] = [:]
    private var uses = 0

    private init() {}

    /// Starts `transfer`; it completes on the loop's thread. Any thread.
    func add(_ transfer: HTTPTransfer) { submit(.add(transfer)) }

    /// Stops `transfer` if it still runs: it completes as cancelled. Any thread.
    func cancel(_ transfer: HTTPTransfer) { submit(.cancel(transfer)) }

    /// Closes the idle connections of `client`, which sends no more. Any thread.
    func forget(_ client: String) { submit(.forget(client)) }

    private func submit(_ command: Command) {
        let start = inbox.withLock { state in
            state.commands.append(command)
            defer { state.started = true }
            return !state.started
        }
        let handle = multi.withLock { made in
            if made == nil, start {
                _ = curl_global_init(Int(CURL_GLOBAL_DEFAULT))
                made = curl_multi_init()
            }
            return made
        }
        guard let handle else {
            // Only the starter gives up: another caller's command, queued before, is failed with the
            // starter's below; resetting here would let a later request start a second thread on the handle.
            guard start else { return }
            inbox.withLock { $0.started = false }
            fail(take(), function: "curl_multi_init", detail: "curl could not make its multi handle")
            return
        }
        if !start {
            curl_multi_wakeup(handle)
        } else if !SystemThread.start(name: "http", { [self] in run() }) {
            // No thread to be had is an answer too, never a continuation left waiting.
            inbox.withLock { $0.started = false }
            fail(take(), function: "pthread_create", detail: "no thread could be started for HTTP")
        }
    }

    /// The commands submitted since the last take, in order.
    private func take() -> [Command] {
        inbox.withLock { state in
            defer { state.commands = [] }
            return state.commands
        }
    }

    private func fail(_ commands: [Command], function: String, detail: String) {
        for case .add(let transfer) in commands {
            transfer.complete(.failure(transfer.failure(.other, function, detail)))
        }
    }

    private func run() {
        guard let multi = multi.withLock({ $0 }) else { return }
        owner.claim()
        let handle = UInt(bitPattern: multi)
        let heartbeat = Heartbeat("http", serves: "every HTTP request", bound: .seconds(10)) {
            _ = curl_multi_wakeup(UnsafeMutableRawPointer(bitPattern: handle))
        }
        while true {
            // Each time round the loop: the commands, curl's work, the finished transfers, then asleep.
            for command in take() {
                switch command {
                case .add(let transfer): start(transfer, multi)
                case .cancel(let transfer): stop(transfer, multi)
                case .forget(let client): closeIdlePools(forgetting: client)
                }
            }
            var active: Int32 = 0
            _ = curl_multi_perform(multi, &active)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                      let transfer = running[handle] else { continue }
                let code = message.pointee.data.result
                end(transfer, handle, multi) { transfer.result(code) }
            }
            // Nothing running: asleep until the next request's curl_multi_wakeup.
            var timeout = -1
            _ = curl_multi_timeout(multi, &timeout)
            let wait: Int32 = timeout < 0 ? -1 : Int32(clamping: timeout)
            _ = heartbeat.sleeping(timeout: wait) { curl_multi_poll(multi, nil, 0, wait < 0 ? Int32.max : wait, nil) }
        }
    }

    private func start(_ transfer: HTTPTransfer, _ multi: UnsafeMutableRawPointer) {
        owner.assertCurrent()
        if transfer.cancelled.load(ordering: .relaxed) {
            transfer.complete(.failure(transfer.failure(.cancelled, "cancel", "cancelled before it started")))
            return
        }
        guard let pool = pool(transfer.pool, client: transfer.client) else {
            fail([.add(transfer)], function: "curl_share_init", detail: "curl could not make a connection cache")
            return
        }
        let handle: UnsafeMutableRawPointer
        do {
            handle = try transfer.prepare(share: pool.share)
        } catch {
            transfer.close()
            transfer.complete(.failure(error))
            return
        }
        let code = curl_multi_add_handle(multi, handle)
        guard code == CURLM_OK else {
            transfer.close()
            fail([.add(transfer)], function: "curl_multi_add_handle", detail: String(cString: curl_multi_strerror(code)))
            return
        }
        pool.using += 1
        running[handle] = transfer
    }

    private func stop(_ transfer: HTTPTransfer, _ multi: UnsafeMutableRawPointer) {
        owner.assertCurrent()
        guard let handle = transfer.handle, running[handle] != nil else { return }
        end(transfer, handle, multi) { .failure(transfer.failure(.cancelled, "cancel", "cancelled")) }
    }

    /// Takes the handle out of the multi (its connection goes back to its pool) and completes the transfer.
    private func end(_ transfer: HTTPTransfer, _ handle: UnsafeMutableRawPointer, _ multi: UnsafeMutableRawPointer,
                     _ result: () -> Result<HTTPResponse, HTTPFailure>) {
        owner.assertCurrent()
        let outcome = result()
        running[handle] = nil
        _ = curl_multi_remove_handle(multi, handle)
        transfer.close()
        if let pool = pools[transfer.pool] {
            pool.using -= 1
            pool.idleSince = MonotonicClock.nanoseconds()
        }
        transfer.complete(outcome)
        closeIdlePools(of: transfer.client)
    }

    private func pool(_ key: String, client: String) -> Pool? {
        owner.assertCurrent()
        uses += 1
        if let pool = pools[key] {
            pool.lastUsed = uses
            return pool
        }
        guard let share = curl_share_init() else { return nil }
        guard curl_share_data(share, CURL_LOCK_DATA_CONNECT) == CURLSHE_OK,
              curl_share_data(share, CURL_LOCK_DATA_DNS) == CURLSHE_OK else {
            curl_share_cleanup(share)
            return nil
        }
        let pool = Pool(share: share, client: client)
        pool.lastUsed = uses
        pools[key] = pool
        return pool
    }

    /// Closes the pools idle past `idleLimit`, and past `poolLimit` the idle ones of `client` least
    /// lately used; all idle ones of a client `forgetting`. One client's pools never close another's.
    private func closeIdlePools(of client: String? = nil, forgetting gone: String? = nil) {
        owner.assertCurrent()
        let now = MonotonicClock.nanoseconds()
        let limit = MonotonicClock.nanoseconds(in: Self.idleLimit)
        var closing = pools.filter { $0.value.using == 0 && (now - $0.value.idleSince >= limit || $0.value.client == gone) }
        if let client {
            let own = pools.filter { $0.value.client == client && closing[$0.key] == nil }
            let idle = own.filter { $0.value.using == 0 }.sorted { $0.value.lastUsed < $1.value.lastUsed }
            for (key, pool) in idle.prefix(max(0, own.count - Self.poolLimit)) { closing[key] = pool }
        }
        for (key, pool) in closing {
            pools[key] = nil
            curl_share_cleanup(pool.share)
        }
    }
}
