// A test's stand-in for systemd's notify socket: a real datagram socket the
// daemon's sd_notify writes to, so READY=1, STATUS= and WATCHDOG=1 arrive as
// they would under systemd, and a test can await them instead of sleeping.
// A wait ends when its task is cancelled too, and the harness posts a line of
// its own (`EXITED=`) when the daemon ends, so nothing waits on a dead daemon.
import Foundation
import SatelliteCore
import Synchronization

final class NotifySocket: Sendable {
    let path: String
    private let fd: Int32
    private let received = Mutex<[String]>([])
    private struct Waiter {
        let id: Int
        let prefixes: [String]
        /// How many more matching lines it waits for.
        var needed: Int
        let continuation: CheckedContinuation<String?, Never>
    }
    private let waiters = Mutex<(next: Int, all: [Waiter])>((0, []))
    private let closed = Mutex(false)
    /// Set by `hold()`: the reader waits on it after its next datagram, as a manager that stopped reading.
    private let holding = Mutex<DispatchSemaphore?>(nil)

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        let bound = UnixSocketAddress(path)?.withSockaddr { bind(fd, $0, $1) } ?? -1
        guard bound == 0 else { throw TestFailure("cannot bind \(path)") }
        let thread = Thread { [self] in receive() }
        thread.start()
    }

    private func receive() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            // errno read at once, beside the call, and only close() or a lasting error ends the reading: an
            // empty datagram, or an errno changed before it was read, ended it for good. (In CI a daemon that
            // had logged it was ready was waited on for a minute with no READY=1 seen: this rules out one cause.)
            let (n, error) = buffer.withUnsafeMutableBytes { raw -> (Int, Int32) in
                let n = recv(fd, raw.baseAddress, raw.count, 0)
                return (n, n < 0 ? errno : 0)
            }
            if n <= 0 {
                if closed.withLock({ $0 }) || (n < 0 && error != EINTR && error != EAGAIN && error != ENOBUFS && error != ENOMEM) { return }
                continue
            }
            post(String(decoding: buffer[..<n], as: UTF8.self))
            if let held = holding.withLock({ $0 }) { held.wait() }
        }
    }

    /// Nothing more is read (after at most one datagram) until `release()`: the socket fills, as
    /// systemd's would if its manager stopped reading.
    func hold() { holding.withLock { $0 = DispatchSemaphore(value: 0) } }

    func release() { holding.withLock { $0?.signal(); $0 = nil } }

    /// Takes `message`'s lines as received: from the daemon, or the harness's own `EXITED=`.
    func post(_ message: String) {
        let lines = message.split(separator: "\n").map(String.init)
        let hits = waiters.withLock { state -> [(CheckedContinuation<String?, Never>, String)] in
            // Under the waiters' lock, so a waiter registering counts each line once, here or there.
            received.withLock { $0.append(contentsOf: lines) }
            var hits: [(CheckedContinuation<String?, Never>, String)] = []
            for index in state.all.indices {
                let matching = lines.filter { line in state.all[index].prefixes.contains { line.hasPrefix($0) } }
                if matching.count >= state.all[index].needed {
                    hits.append((state.all[index].continuation, matching[state.all[index].needed - 1]))
                    state.all[index].needed = 0
                } else {
                    state.all[index].needed -= matching.count
                }
            }
            state.all.removeAll { $0.needed == 0 }
            return hits
        }
        for (continuation, line) in hits { continuation.resume(returning: line) }
    }

    /// Every line received so far ("READY=1", "STATUS=Ready.", …).
    var messages: [String] { received.withLock { $0 } }

    /// Returns once a line starting with `prefix` has arrived (or already had), or the task is cancelled.
    func wait(for prefix: String) async {
        _ = await first(of: [prefix])
    }

    /// The first line, received or to come, that starts with one of `prefixes`; nil if the task is cancelled first.
    func first(of prefixes: [String]) async -> String? {
        await nth(1, of: prefixes)
    }

    /// How many lines so far start with `prefix`.
    func count(of prefix: String) -> Int { received.withLock { $0.filter { $0.hasPrefix(prefix) }.count } }

    /// The `n`th line, received or to come, that starts with one of `prefixes`; nil if the task is cancelled first.
    func nth(_ n: Int, of prefixes: [String]) async -> String? {
        let id = waiters.withLock { state in
            state.next += 1
            return state.next
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
                // Registered and checked under one lock with post()'s removal, so no line slips between.
                let now = waiters.withLock { state -> String?? in
                    if Task.isCancelled { return .some(nil) }
                    let matching = received.withLock { $0.filter { line in prefixes.contains { line.hasPrefix($0) } } }
                    if matching.count >= n { return .some(matching[n - 1]) }
                    state.all.append(Waiter(id: id, prefixes: prefixes, needed: n - matching.count, continuation: continuation))
                    return .none
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let mine = waiters.withLock { state -> CheckedContinuation<String?, Never>? in
                guard let index = state.all.firstIndex(where: { $0.id == id }) else { return nil }
                return state.all.remove(at: index).continuation
            }
            mine?.resume(returning: nil)
        }
    }

    /// Closes the socket (its thread then ends); only the first call does anything.
    func close() {
        guard closed.withLock({ was in defer { was = true }; return !was }) else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
        unlink(path)
    }
}
