// parlourctl's end of the control socket: connect, send a line, read lines.
// It talks to the daemon and to nothing else, and holds no secret.
import Foundation
import SatelliteCore

/// A blocking connection to the daemon's control socket. One thread may send
/// while another reads (`listen --hold` sends `end` from the stdin thread);
/// `buffer` belongs to the reading thread alone.
final class ControlClient: @unchecked Sendable {
    private let fd: Int32
    private var buffer: [UInt8] = []

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
                let user = ProcessInfo.processInfo.userName
                throw SatelliteError(.permissionDenied,
                    "You may not talk to the satellite at \(path). \(AccessPolicy.howToGetAccess(user: user.isEmpty ? nil : user))")
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
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return nil }
            buffer.append(contentsOf: chunk[..<n])
        }
    }
}
