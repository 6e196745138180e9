// A test's stand-in for journald: binds /run/systemd/journal/socket (inside the
// private mount namespace of scripts/netns-run, never the host's) and parses
// the native protocol's datagrams into field dictionaries.
import Foundation
import SatelliteCore

final class JournalSocket: Sendable {
    static let path = "/run/systemd/journal/socket"
    private let fd: Int32
    let records: AsyncStream<[String: String]>

    private let start: @Sendable () -> Void

    /// `reading` false: nothing is read until `startReading()`, and the socket holds little, as a
    /// journald that has stopped reading.
    init(reading: Bool = true) throws {
        try? FileManager.default.createDirectory(atPath: "/run/systemd/journal", withIntermediateDirectories: true)
        unlink(JournalSocket.path)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        let bound = UnixSocketAddress(JournalSocket.path)?.withSockaddr { bind(fd, $0, $1) } ?? -1
        guard bound == 0 else {
            Glibc.close(fd)
            throw TestFailure("cannot bind \(JournalSocket.path): \(String(cString: strerror(errno))); run the tests through scripts/netns-run")
        }
        if !reading {
            var small: Int32 = 4096
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        }
        self.fd = fd
        let (stream, continuation) = AsyncStream.makeStream(of: [String: String].self)
        records = stream
        start = { Thread {
            var buffer = [UInt8](repeating: 0, count: 256 * 1024)
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                continuation.yield(JournalSocket.parse(buffer[..<n]))
            }
            continuation.finish()
        }.start() }
        if reading { start() }
    }

    /// Starts reading a socket made with `reading: false`.
    func startReading() { start() }

    /// `KEY=value\n`, or `KEY\n` + 64-bit little-endian length + bytes + `\n` for values with newlines.
    static func parse(_ datagram: ArraySlice<UInt8>) -> [String: String] {
        var fields: [String: String] = [:]
        var i = datagram.startIndex
        while i < datagram.endIndex {
            guard let newline = datagram[i...].firstIndex(of: 10) else { break }
            let line = datagram[i..<newline]
            if let equals = line.firstIndex(of: UInt8(ascii: "=")) {
                fields[String(decoding: line[..<equals], as: UTF8.self)] = String(decoding: line[(equals + 1)...], as: UTF8.self)
                i = newline + 1
            } else {
                let key = String(decoding: line, as: UTF8.self)
                let start = newline + 1
                guard start + 8 <= datagram.endIndex else { break }
                var length = 0
                for k in 0..<8 { length |= Int(datagram[start + k]) << (8 * k) }
                let valueStart = start + 8
                guard valueStart + length <= datagram.endIndex else { break }
                fields[key] = String(decoding: datagram[valueStart..<(valueStart + length)], as: UTF8.self)
                i = valueStart + length + 1
            }
        }
        return fields
    }

    func next(where match: ([String: String]) -> Bool) async -> [String: String]? {
        for await record in records where match(record) { return record }
        return nil
    }

    func close() {
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
        unlink(JournalSocket.path)
    }
}
