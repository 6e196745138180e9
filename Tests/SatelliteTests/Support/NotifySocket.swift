// A test's stand-in for systemd's notify socket: a real datagram socket the
// daemon's sd_notify writes to, so READY=1, STATUS= and WATCHDOG=1 arrive as
// they would under systemd, and a test can await them instead of sleeping.
import Foundation
import SatelliteCore
import Synchronization

final class NotifySocket: Sendable {
    let path: String
    private let fd: Int32
    private let received = Mutex<[String]>([])
    private let waiters = Mutex<[(String, CheckedContinuation<Void, Never>)]>([])

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
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            let message = String(decoding: buffer[..<n], as: UTF8.self)
            let lines = message.split(separator: "\n").map(String.init)
            received.withLock { $0.append(contentsOf: lines) }
            let ready = waiters.withLock { w -> [CheckedContinuation<Void, Never>] in
                let hit = w.filter { waiter in lines.contains { $0.hasPrefix(waiter.0) } }.map(\.1)
                w.removeAll { waiter in lines.contains { $0.hasPrefix(waiter.0) } }
                return hit
            }
            ready.forEach { $0.resume() }
        }
    }

    /// Every line received so far ("READY=1", "STATUS=Ready.", …).
    var messages: [String] { received.withLock { $0 } }

    /// Returns once a line starting with `prefix` has arrived (or already had).
    func wait(for prefix: String) async {
        await withCheckedContinuation { continuation in
            let already = received.withLock { lines in lines.contains { $0.hasPrefix(prefix) } }
            if already { continuation.resume(); return }
            waiters.withLock { $0.append((prefix, continuation)) }
            // A line may have arrived between the check and the append.
            if received.withLock({ lines in lines.contains { $0.hasPrefix(prefix) } }) {
                let mine = waiters.withLock { w -> CheckedContinuation<Void, Never>? in
                    guard let i = w.firstIndex(where: { $0.0 == prefix }) else { return nil }
                    return w.remove(at: i).1
                }
                mine?.resume()
            }
        }
    }

    func close() {
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
        unlink(path)
    }
}
