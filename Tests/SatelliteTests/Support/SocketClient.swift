// A raw client of the daemon's control socket, for tests that speak the wire
// protocol themselves: send any bytes, and await the lines that come back.
import Foundation
import Synchronization
import SatelliteCore

final class SocketClient: Sendable {
    private let fd: Int32
    let lines: AsyncStream<String>

    init(path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let connected = UnixSocketAddress(path)?.withSockaddr { connect(fd, $0, $1) } ?? -1
        guard connected == 0 else {
            close(fd)
            throw TestFailure("cannot connect to \(path): \(String(cString: strerror(errno)))")
        }
        self.fd = fd
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        lines = stream
        Thread {
            var buffer: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                buffer.append(contentsOf: chunk[..<n])
                while let newline = buffer.firstIndex(of: 10) {
                    continuation.yield(String(decoding: buffer[..<newline], as: UTF8.self))
                    buffer.removeSubrange(...newline)
                }
            }
            continuation.finish()
        }.start()
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n <= 0 { return }
            offset += n
        }
    }

    func request(_ command: ControlCommand, id: String, callback: CallbackURL? = nil, wait: Bool = true) {
        send(ControlProtocol.encode(command, id: .string(id), callback: callback, wait: wait) + "\n")
    }

    /// Starts a watch and returns once the daemon is streaming (its first line, the status, has come).
    @discardableResult
    func watch() async -> JSONValue? {
        request(.watch, id: "watch")
        return await next { $0["event"] == "status" }
    }

    /// The next line that parses and satisfies `match`.
    func next(where match: (JSONValue) -> Bool) async -> JSONValue? {
        for await line in lines {
            if let value = try? JSONValue.parse(line), match(value) { return value }
        }
        return nil
    }

    /// The result for request `id`.
    func result(_ id: String) async -> JSONValue? { await next { $0["id"] == .string(id) && $0["status"] != nil } }

    /// The next watch event that says the state is now `state`.
    func state(_ state: String) async -> JSONValue? {
        await next { $0["event"] == "state" && $0["state"] == .string(state) }
    }

    func closeWriting() { shutdown(fd, Int32(SHUT_WR)) }

    /// Goes away as a caller that quits does: the daemon reads the end, and its writes fail.
    func disconnect() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// Every line that parses from now until the daemon closes the connection.
    func rest() async -> [JSONValue] {
        var values: [JSONValue] = []
        for await line in lines {
            if let value = try? JSONValue.parse(line) { values.append(value) }
        }
        return values
    }

    deinit { close(fd) }
}
