// One client of the control socket. Reading happens on a thread of its own
// (blocking reads are simple and a satellite has few clients); writes go
// through a serial queue with a send timeout, so a client that stops reading
// cannot stall the daemon. The connection stays open for writing after the
// client half-closes, until every request it sent has its result.
import Foundation
import Synchronization
import SatelliteCore

/// A connected control client. Results and events are written through it.
public final class ControlConnection: Sendable, Hashable {
    public let number: Int
    /// Who connected, from the kernel; nil when it did not say (then only reading commands run).
    public let peer: AccessPolicy.Peer?
    private let fd: Int32
    private let writes: DispatchQueue
    private struct Life { var pending = 0; var readEnded = false; var streaming = false; var closed = false }
    private let life = Mutex(Life())

    init(fd: Int32, number: Int) {
        self.fd = fd
        self.number = number
        self.peer = PeerCredentials.of(fd)
        self.writes = DispatchQueue(label: "parlour.control.\(number)")
        // A client that does not read for 5 s is dropped rather than blocking its writer.
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    public static func == (a: ControlConnection, b: ControlConnection) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    /// Queues one line (a newline is added). Returns at once.
    public func send(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        writes.async { [self] in
            guard !life.withLock({ $0.closed }) else { return }
            let written = bytes.withUnsafeBytes { buffer in (try? POSIX.writeAll(fd, buffer)) != nil }
            // The client went away or stopped reading: stop writing to it.
            if !written { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// Writes the result of a request and lets the connection close if it was the last.
    public func finish(id: JSONValue, _ result: ControlResult) {
        send(result.line(id: id))
        life.withLock { $0.pending -= 1 }
        closeIfDone()
    }

    /// Marks a request as under way: the connection stays open until `finish`.
    func begin() { life.withLock { $0.pending += 1 } }

    /// The connection now carries a stream (watch) until the client goes.
    public func startStreaming() { life.withLock { $0.streaming = true } }
    public func stopStreaming() {
        life.withLock { $0.streaming = false }
        closeIfDone()
    }

    func readEnded() {
        life.withLock { $0.readEnded = true }
        closeIfDone()
    }

    private func closeIfDone() {
        let done = life.withLock { l in l.readEnded && l.pending <= 0 && !l.streaming && !l.closed }
        if done { close() }
    }

    /// Closes after every queued write has been tried.
    func close() {
        writes.async { [self] in
            let first = life.withLock { l -> Bool in
                defer { l.closed = true }
                return !l.closed
            }
            if first { Glibc.close(fd) }
        }
    }

    /// Wakes the reading thread (at shutdown) without closing the descriptor under it.
    func interrupt() { shutdown(fd, Int32(SHUT_RD)) }

    /// Reads lines until the client closes; hands each to `line`, or nil for a line over 64 KiB.
    func readLines(_ line: (ArraySlice<UInt8>?) -> Void) {
        var buffer: [UInt8] = []
        var discarding = false
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            var start = 0
            for i in 0..<n where chunk[i] == UInt8(ascii: "\n") {
                if discarding {
                    discarding = false
                } else {
                    buffer.append(contentsOf: chunk[start..<i])
                    if !buffer.isEmpty { line(buffer[...]) }
                }
                buffer.removeAll(keepingCapacity: true)
                start = i + 1
            }
            if !discarding {
                buffer.append(contentsOf: chunk[start..<n])
                if buffer.count > ControlProtocol.maxLineBytes {
                    // Answer once and skip the rest of the line, without holding it in memory.
                    line(nil)
                    buffer.removeAll()
                    discarding = true
                }
            }
        }
        readEnded()
    }
}
