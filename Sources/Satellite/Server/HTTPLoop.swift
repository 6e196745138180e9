// Every HTTP transfer of the daemon on one thread: libcurl's multi interface,
// curl_multi_poll on the transfers' sockets and curl_multi_wakeup when a
// request comes or is cancelled. Before, each request was curl_easy_perform on
// a thread of its own and a new connection; now a request starts no thread, and
// a connection to a server is kept for the next request to it (curl's cache,
// 118 s at most). Chosen over libwebsockets' own HTTP client (linked then, for
// the /listen socket, which has a client of its own since) by what each costs:
// the wake-ups are the same (one thread asleep in poll, woken by its transfers alone: on a CPU 0 times in 10 s of streaming),
// and lws would save memory, about 6 MiB resident (libcurl's own libraries
// 4.25 MiB, and the 1.7 MiB of libcrypto its curl_global_init sets up
// whatever the flags; BENCHMARKS.md, "HTTP on one loop"); but lws has no
// CURLOPT_PINNEDPUBLICKEY, CURLOPT_RESOLVE over every pinned address nor
// certificate info for the key shown at pairing, so every trust rule would
// be written again by hand. That is the next step toward 12 MB, not this one.
//
// Easy to get wrong: a reused connection must be one the request could have
// made itself. Each pool (HTTPTransfer.pool: the client, scheme, host, port,
// pinned addresses, pinned key, verification) has a share of its own
// (CURL_LOCK_DATA_CONNECT and _DNS), so a connection made to one address, or
// checked against one key, never carries a request pinned to another, and a
// callback's connection never carries the token. A key wanted from the
// handshake takes a fresh connection (HTTPTransfer).
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
        var idleSince = ContinuousClock.now

        init(share: UnsafeMutableRawPointer, client: String) {
            self.share = share
            self.client = client
        }
    }

    /// A pool idle this long goes with its connections: curl reuses none older (CURLOPT_MAXAGE_CONN, 118 s).
    private static let idleLimit = Duration.seconds(120)
    /// Past this many pools of one client, its idle ones least lately used go too (callbacks may name any host).
    private static let poolLimit = 8

    private let multi: UnsafeMutableRawPointer?
    private let inbox = Mutex<(commands: [Command], started: Bool)>(([], false))

    // Touched by the loop's thread alone.
    private var running: [UnsafeMutableRawPointer: HTTPTransfer] = [:]
    private var pools: [String: Pool] = [:]
    private var uses = 0

    private init() {
        // curl_global_init is not safe to race with itself; a static is initialised once. Since curl 7.57
        // the flags no longer decide whether the TLS library is set up: curl's OpenSSL is, either way.
        _ = curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        multi = curl_multi_init()
    }

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
        guard let multi else {
            fail(take(), function: "curl_multi_init", detail: "curl could not make its multi handle")
            return
        }
        if !start {
            curl_multi_wakeup(multi)
        } else if !SystemThread.start(name: "http", { [self] in run() }) {
            // No thread to be had is an answer too, never a continuation left waiting.
            inbox.withLock { $0.started = false }
            fail(take(), function: "pthread_create", detail: "no thread could be started for HTTP")
        }
    }

    private func take() -> [Command] {
        inbox.withLock { state in
            defer { state.commands = [] }
            return state.commands
        }
    }

    private func fail(_ commands: [Command], function: String, detail: String) {
        for case .add(let transfer) in commands {
            transfer.complete(.failure(HTTPFailure(kind: .other, function: function, code: 0, detail: detail,
                                                   method: transfer.request.method,
                                                   url: ServerAnswers.displayURL(transfer.request.url))))
        }
    }

    private func run() {
        guard let multi else { return }
        while true {
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
            _ = curl_multi_poll(multi, nil, 0, timeout < 0 ? Int32.max : Int32(clamping: timeout), nil)
        }
    }

    private func start(_ transfer: HTTPTransfer, _ multi: UnsafeMutableRawPointer) {
        if transfer.cancelled.load(ordering: .relaxed) {
            transfer.complete(.failure(transfer.cancelledFailure("cancelled before it started")))
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
        guard let handle = transfer.handle, running[handle] != nil else { return }
        end(transfer, handle, multi) { .failure(transfer.cancelledFailure("cancelled")) }
    }

    /// Takes the handle out of the multi (its connection goes back to its pool) and completes the transfer.
    private func end(_ transfer: HTTPTransfer, _ handle: UnsafeMutableRawPointer, _ multi: UnsafeMutableRawPointer,
                     _ result: () -> Result<HTTPResponse, HTTPFailure>) {
        let outcome = result()
        running[handle] = nil
        _ = curl_multi_remove_handle(multi, handle)
        transfer.close()
        if let pool = pools[transfer.pool] {
            pool.using -= 1
            pool.idleSince = .now
        }
        transfer.complete(outcome)
        closeIdlePools(of: transfer.client)
    }

    private func pool(_ key: String, client: String) -> Pool? {
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
        let now = ContinuousClock.now
        var closing = pools.filter { $0.value.using == 0 && (now - $0.value.idleSince >= Self.idleLimit || $0.value.client == gone) }
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
