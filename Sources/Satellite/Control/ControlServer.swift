// The control socket parlourctl talks to (INTERFACE.md, "The control socket").
// It owns the listening socket: binds it (refusing to steal one a live daemon
// holds, clearing one a dead daemon left), accepts on a thread of its own, and
// hands every well-formed request to the handler. A bad line is answered here
// and never reaches the handler; no line can close the daemon or a connection.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import Synchronization
import SatelliteCore

/// Runs requests that came over the control socket.
public protocol ControlHandler: Sendable {
    /// Runs one request; must end with exactly one `connection.finish`.
    func handle(_ request: ControlRequest, on connection: ControlConnection) async
    /// The client closed its side (a held listen ends with it).
    func readEnded(_ connection: ControlConnection) async
}

/// The listening control socket.
public final class ControlServer: Sendable {
    public let path: String
    private let fd: Int32
    private let handler: any ControlHandler
    private let connections = Mutex<Set<ControlConnection>>([])
    private let stopped = Atomic<Bool>(false)

    /// Binds and listens at `path`, creating its folder. Throws when another daemon holds it.
    public init(path: String, handler: any ControlHandler) throws(SatelliteError) {
        self.path = path
        self.handler = handler
        self.fd = try ControlServer.listen(at: path)
    }

    static func listen(at path: String) throws(SatelliteError) -> Int32 {
        let folder = SatellitePaths.folder(of: path)
        if !folder.isEmpty { try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        guard let address = UnixSocketAddress(path) else {
            throw SatelliteError(.invalidRequest, "The socket path \(path) is longer than 107 bytes; choose a shorter --socket.")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SatelliteError(.internalError, "Cannot make a socket: \(String(cString: strerror(errno))).") }
        func bindOnce() -> Int32 { address.withSockaddr { bind(fd, $0, $1) } }
        if bindOnce() != 0 {
            let code = errno
            if code == EADDRINUSE && !ControlServer.someoneListens(at: path) {
                unlink(path)  // left by a daemon that died
            } else {
                close(fd)
                let why = code == EADDRINUSE
                    ? "another parlour-satellite is already listening there. Stop it first, or give this one another --socket."
                    : String(cString: strerror(code)) + "."
                throw SatelliteError(.internalError, "Cannot use the control socket \(path): \(why)")
            }
            if bindOnce() != 0 {
                let why = String(cString: strerror(errno))
                close(fd)
                throw SatelliteError(.internalError, "Cannot use the control socket \(path): \(why).")
            }
        }
        // Owner and group may talk to the daemon; the group is `parlour` where it exists.
        chmod(path, 0o660)
        if let group = getgrnam("parlour") { chown(path, uid_t.max, group.pointee.gr_gid) }
        guard Glibc.listen(fd, 64) == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw SatelliteError(.internalError, "Cannot listen on the control socket \(path): \(why).")
        }
        return fd
    }

    /// Whether a live process accepts connections at `path`.
    public static func someoneListens(at path: String) -> Bool {
        guard let address = UnixSocketAddress(path) else { return false }
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { close(probe) }
        return address.withSockaddr { connect(probe, $0, $1) } == 0
    }

    /// Starts accepting on a thread of its own.
    public func start() {
        SystemThread.start(name: "control-accept") { [self] in acceptLoop() }
    }

    private func acceptLoop() {
        var number = 0
        while !stopped.load(ordering: .relaxed) {
            let client = accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if stopped.load(ordering: .relaxed) { break }
                // Out of descriptors or the like: wait a little rather than spin.
                usleep(100_000)
                continue
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            number += 1
            let connection = ControlConnection(fd: client, number: number)
            connections.withLock { _ = $0.insert(connection) }
            SystemThread.start(name: "control-\(number)", stackSize: 256 * 1024) { [self] in serve(connection) }
        }
    }

    private func serve(_ connection: ControlConnection) {
        connection.readLines { line in
            if let line { take(line, from: connection) } else { refuseLongLine(on: connection) }
        }
        Task { [self] in
            await handler.readEnded(connection)
            connections.withLock { _ = $0.remove(connection) }
        }
    }

    private func take(_ line: ArraySlice<UInt8>, from connection: ControlConnection) {
        switch ControlProtocol.decode(line) {
        case .success(let request):
            connection.begin()
            let handler = self.handler
            Task { await handler.handle(request, on: connection) }
        case .failure(let rejection):
            connection.send(ControlResult.error(rejection.error).line(id: rejection.id))
        }
    }

    private func refuseLongLine(on connection: ControlConnection) {
        connection.send(ControlResult.failure(.invalidRequest,
            "The request is longer than 64 KiB; send one JSON object of at most 64 KiB a line.").line(id: .null))
    }

    /// Stops accepting, removes the socket file and wakes every reader.
    public func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        unlink(path)
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        for connection in connections.withLock({ Array($0) }) { connection.interrupt() }
    }
}
