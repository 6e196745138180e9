// One client of the control socket. It costs no thread: the control loop
// (ControlLoop) reads its lines and writes its queued output when the socket
// can take it. What it read comes out of `requests` in the order it came; the
// connection stays open for writing after the client half-closes, until every
// request it sent has its result. A client that leaves its output unread for
// the send timeout is dropped, so it cannot hold the daemon's memory.
import Glibc
import Synchronization
import SatelliteCore

/// A connected control client. Results and events are written through it.
public final class ControlConnection: Sendable, Hashable {
    public let number: Int
    let fd: Int32
    let uid: UInt32?
    /// The requests read, in order; finished when the client stops sending.
    let requests: AsyncStream<ControlRequest>
    private let sink: AsyncStream<ControlRequest>.Continuation
    private let credentials: AccessPolicy.Peer?
    private let named = Mutex<AccessPolicy.Peer??>(nil)
    private let wake: @Sendable () -> Void

    struct Life {
        var out: [UInt8] = []
        /// Bytes of `out` already written.
        var sent = 0
        var pending = 0
        var readEnded = false
        var streaming = false
        /// Asked to close once `out` is written.
        var closing = false
        /// Closed by the loop: nothing more is written.
        var closed = false
    }
    let life = Mutex(Life())

    init(fd: Int32, number: Int, peer: AccessPolicy.Peer?, wake: @escaping @Sendable () -> Void) {
        self.fd = fd
        self.number = number
        self.wake = wake
        credentials = peer
        uid = peer?.uid
        (requests, sink) = AsyncStream.makeStream(of: ControlRequest.self)
    }

    public static func == (a: ControlConnection, b: ControlConnection) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    /// Who connected, from the kernel; nil when it did not say (then only reading commands run).
    /// The user's name is looked up the first time it is asked for, not by the loop.
    public var peer: AccessPolicy.Peer? {
        if let known = named.withLock({ $0 }) { return known }
        var peer = credentials
        if let uid = peer?.uid { peer?.user = PeerCredentials.userName(uid) }
        named.withLock { $0 = .some(peer) }
        return peer
    }

    /// Queues one line (a newline is added). Returns at once.
    public func send(_ line: String) {
        let queued = life.withLock { l -> Bool in
            guard !l.closed else { return false }
            l.out.append(contentsOf: (line + "\n").utf8)
            return true
        }
        if queued { wake() }
    }

    /// Writes the result of a request and lets the connection close if it was the last.
    public func finish(id: JSONValue, _ result: ControlResult) {
        send(result.line(id: id))
        life.withLock { $0.pending -= 1 }
        closeIfDone()
    }

    /// The connection now carries a stream (watch) until the client goes.
    public func startStreaming() { life.withLock { $0.streaming = true } }
    public func stopStreaming() {
        life.withLock { $0.streaming = false }
        closeIfDone()
    }

    /// A request was read: the connection stays open until its `finish`.
    func take(_ request: ControlRequest) {
        life.withLock { $0.pending += 1 }
        sink.yield(request)
    }

    /// The client sends nothing more (or the daemon stops reading).
    func endReading() {
        sink.finish()
        life.withLock { $0.readEnded = true }
        closeIfDone()
    }

    private func closeIfDone() {
        let done = life.withLock { l -> Bool in
            guard l.readEnded, l.pending <= 0, !l.streaming, !l.closing else { return false }
            l.closing = true
            return true
        }
        if done { wake() }
    }
}
