// parlourctl's end of the control socket: connect, send a line, read lines.
// It talks to the daemon and to nothing else, and holds no secret.
import Glibc
import ControlCore

/// A blocking connection to the daemon's control socket, used from one thread.
final class ControlClient {
    private let fd: Int32
    private var buffer: [UInt8] = []
    /// While set, reading a line also reads standard input (and drops what comes), and
    /// when it ends this runs once and is cleared: `listen --hold` sends `end` from it.
    /// One poll watches both, so no second thread is needed.
    var whenInputEnds: (() -> Void)?

    /// Connects, or fails with `daemon_unavailable` (nobody there) or `permission_denied`.
    init(path: String) throws(SatelliteError) {
        guard let address = UnixSocketAddress(path) else {
            throw SatelliteError(.invalidRequest, "The socket path \(path) is longer than 107 bytes; give a shorter --socket.")
        }
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SatelliteError(.daemonUnavailable, "Cannot make a socket: \(String(cString: strerror(errno))).") }
        let connected = address.withSockaddr { connect(fd, $0, $1) }
        if connected != 0 {
            let code = errno
            close(fd)
            if code == EACCES || code == EPERM {
                throw SatelliteError(.permissionDenied,
                    "You may not talk to the satellite at \(path). \(AccessPolicy.howToGetAccess(user: ProcessEnvironment.userName))")
            }
            throw SatelliteError(.daemonUnavailable,
                "The satellite is not running (nothing answers at \(path): \(String(cString: strerror(code)))). Start it with: sudo systemctl start parlour-satellite")
        }
    }

    deinit { close(fd) }

    func send(_ line: String) throws(SatelliteError) {
        let bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw SatelliteError(.daemonUnavailable, "The satellite closed the connection.") }
            offset += n
        }
    }

    /// The next line, or nil when the daemon closed the connection.
    func readLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            waitWhileInputOpen()
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return nil }
            buffer.append(contentsOf: chunk[..<n])
        }
    }

    /// Returns once the socket has something to read, reading standard input meanwhile
    /// while `whenInputEnds` is set; at its end (or an error, or no standard input at all)
    /// calls `whenInputEnds`.
    private func waitWhileInputOpen() {
        while let ended = whenInputEnds {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: 0, events: Int16(POLLIN), revents: 0)]
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 {
                var scratch = [UInt8](repeating: 0, count: 4096)
                let n = fds[1].revents & Int16(POLLNVAL) != 0 ? 0 : scratch.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
                if n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN) {
                    whenInputEnds = nil
                    ended()
                }
            }
            if fds[0].revents != 0 { return }
        }
    }
}
