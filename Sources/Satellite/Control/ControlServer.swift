// The control socket parlourctl talks to (INTERFACE.md, "The control socket").
// It owns the listening socket: binds it (refusing to steal one a live daemon
// holds, clearing one a dead daemon left) with its mode and group set where
// nobody else can reach it, and serves each connection's requests in the
// order they came: the next starts once the one before has finished, or, for
// a held `listen` and `watch`, once it is under way (so `end` can never
// overtake its `listen`). One thread (ControlLoop) reads and writes them all.
import Glibc
import Synchronization
import SatelliteCore

/// Runs requests that came over the control socket.
public protocol ControlHandler: Sendable {
    /// Runs one request; must end with exactly one `connection.finish`. Calls `underWay` once the
    /// request has started, when the next request on the connection may start before it ends.
    func handle(_ request: ControlRequest, on connection: ControlConnection, underWay: @escaping @Sendable () -> Void) async
    /// The client closed its side (a held listen ends with it).
    func readEnded(_ connection: ControlConnection) async
}

/// The listening control socket.
public final class ControlServer: Sendable {
    public let path: String
    private let loop: ControlLoop
    private let handler: any ControlHandler

    /// Binds and listens at `path`, creating its folder. Throws when another daemon holds it.
    public init(path: String, handler: any ControlHandler, limits: ControlLimits = ControlLimits()) throws(SatelliteError) {
        self.path = path
        self.handler = handler
        let fd = try ControlServer.listen(at: path)
        do {
            loop = try ControlLoop(listenFD: fd, limits: limits)
        } catch {
            close(fd)
            unlink(path)
            throw error
        }
    }

    /// Binds in a private folder beside `path` (0700, this process's alone), sets the mode and
    /// group there, where no one can swap the file under the chmod, and only then links it into
    /// place: `path` never exists with other permissions, and no chmod follows a path an attacker
    /// could have replaced.
    static func listen(at path: String) throws(SatelliteError) -> Int32 {
        let folder = SatellitePaths.folder(of: path)
        if !folder.isEmpty { try? FileSystem.makeFolders(folder) }
        guard UnixSocketAddress(path) != nil else {
            throw SatelliteError(.invalidRequest, "The socket path \(path) is longer than 107 bytes; choose a shorter --socket.")
        }
        func failure(_ why: String) -> SatelliteError { SatelliteError(.internalError, "Cannot use the control socket \(path): \(why)") }
        func reason() -> String { String(cString: strerror(errno)) + "." }
        if someoneListens(at: path) {
            throw failure("another parlour-satellite is already listening there. Stop it first, or give this one another --socket.")
        }
        var template = Array(SatellitePaths.joined(folder.isEmpty ? "." : folder, ".cXXXXXX").utf8CString)
        guard mkdtemp(&template) != nil else { throw failure("cannot make a private folder beside it: " + reason()) }
        let privateFolder = String(cBuffer: template)
        let staged = SatellitePaths.joined(privateFolder, "s")
        defer {
            unlink(staged)
            rmdir(privateFolder)
        }
        guard let stagedAddress = UnixSocketAddress(staged) else {
            throw failure("the folder's path is too long for a socket beside it; choose a shorter --socket.")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SatelliteError(.internalError, "Cannot make a socket: \(reason())") }
        guard stagedAddress.withSockaddr({ bind(fd, $0, $1) }) == 0 else {
            let why = reason()
            close(fd)
            throw failure(why)
        }
        // Owner and group may talk to the daemon; the group is `parlour` where it exists.
        chmod(staged, 0o660)
        if let group = getgrnam("parlour") { chown(staged, uid_t.max, group.pointee.gr_gid) }
        guard Glibc.listen(fd, 128) == 0 else {
            let why = reason()
            close(fd)
            throw failure("cannot listen: " + why)
        }
        // link(2) never replaces: a file there now is a dead daemon's socket (nobody listened above).
        if link(staged, path) != 0 {
            if errno == EEXIST, !someoneListens(at: path) {
                unlink(path)
                if link(staged, path) == 0 { return fd }
            }
            let why = errno == EEXIST
                ? "another parlour-satellite is already listening there. Stop it first, or give this one another --socket."
                : reason()
            close(fd)
            throw failure(why)
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

    /// Starts the control loop's thread. Throws when no thread can be had.
    public func start() throws(SatelliteError) {
        guard SystemThread.start(name: "control", { [loop] in loop.run() }) else {
            throw SatelliteError(.internalError, "Cannot start the control socket's thread: \(String(cString: strerror(errno))).")
        }
    }

    /// Serves every connection until `stop`. A connection's requests are carried on past it, to their
    /// results, by a task of its own: shutdown ends them through the turn and the watches, which the
    /// runner stops after this, so waiting for them here would wait for what is stopped later.
    public func run() async {
        for await connection in loop.connections {
            Task { await self.serve(connection) }
        }
    }

    /// One connection's requests, in the order they came.
    private func serve(_ connection: ControlConnection) async {
        await withDiscardingTaskGroup { group in
            for await request in connection.requests {
                let gate = Gate()
                let handler = self.handler
                group.addTask {
                    await handler.handle(request, on: connection, underWay: gate.open)
                    gate.open()
                }
                await gate.wait()
            }
            await handler.readEnded(connection)
        }
    }

    /// Stops accepting, removes the socket file and stops reading; results under way are still written.
    public func stop() {
        unlink(path)
        loop.stop()
    }
}

/// Opens once; `wait` returns once it is open.
private final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func open() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard !s.open else { return nil }
            s.open = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { s -> Bool in
                if s.open { return true }
                s.waiter = continuation
                return false
            }
            if ready { continuation.resume() }
        }
    }
}
