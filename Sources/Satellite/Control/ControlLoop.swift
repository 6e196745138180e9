// The control socket's one thread: a poll(2) loop over the listening socket,
// every connection and a wake-up pipe. No connection costs a thread of its
// own, so a flood of clients cannot starve the daemon of threads; the caps
// (ControlAdmission) keep it from starving of descriptors, and a spare
// descriptor lets even a client that arrives when none is left be told why.
// Hand-written rather than on libdispatch's sources: one loop that owns every
// descriptor it polls is simpler to reason about than a source per connection,
// and it closes a descriptor only on its own thread, so no poll can ever see
// a number that was reused underneath it.
import Glibc
import Synchronization
import SatelliteCore

/// Accepts, reads and writes for every control connection, on one thread.
final class ControlLoop: @unchecked Sendable {
    /// The connections admitted, for ControlServer to serve; finished when the loop stops accepting.
    let connections: AsyncStream<ControlConnection>
    private let admitted: AsyncStream<ControlConnection>.Continuation
    private let limits: ControlLimits
    private let stopping = Atomic<Bool>(false)
    private let wakePipe: WakePipe
    /// The loop's thread, which alone touches what follows.
    private let owner = OwnerThread("control")

    // Touched by the loop's thread alone.
    private var listenFD: Int32
    private var slots: [Slot] = []
    private var number = 0
    /// Held open for the moment no descriptor is left: closed to accept a client and tell it so.
    private var spare: Int32
    private var acceptPausedUntil: ContinuousClock.Instant?

    private struct Slot {
        let connection: ControlConnection
        let since: ContinuousClock.Instant
        var buffer: [UInt8] = []
        var discarding = false
        var sawLine = false
        var reading = true
        var stalledSince: ContinuousClock.Instant?
    }

    /// Most output a client may leave unread before it is dropped.
    static let maxQueued = 4 * 1024 * 1024
    /// Clients accepted in one wake-up, so that those turned away are closed before more arrive.
    static let acceptBatch = 64

    init(listenFD: Int32, limits: ControlLimits) throws(SatelliteError) {
        guard let pipe = WakePipe() else {
            throw SatelliteError(.internalError, "Cannot make the control loop's pipe: \(String(cString: strerror(errno))).")
        }
        _ = fcntl(listenFD, F_SETFL, fcntl(listenFD, F_GETFL) | O_NONBLOCK)
        wakePipe = pipe
        self.listenFD = listenFD
        self.limits = limits
        spare = open("/dev/null", O_RDONLY | O_CLOEXEC)
        (connections, admitted) = AsyncStream.makeStream(of: ControlConnection.self)
    }

    /// Wakes the loop: there is output to write or a connection to close. Any thread.
    func wake() { wakePipe.wake() }

    /// Stops accepting and reading; what is queued is still written. Any thread.
    func stop() {
        stopping.store(true, ordering: .relaxed)
        wake()
    }

    /// The loop; returns once stopped and every connection is closed.
    func run() {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        owner.claim()
        let heartbeat = Heartbeat("control", serves: "every parlourctl request", bound: .seconds(10)) { [wakePipe] in wakePipe.wake() }
        defer { heartbeat.ended() }
        while true {
            if stopping.load(ordering: .relaxed), listenFD >= 0 {
                close(listenFD)
                listenFD = -1
                admitted.finish()
                for i in slots.indices where slots[i].reading { stopReading(i) }
            }
            closeFinished()
            if listenFD < 0 && slots.isEmpty { return }

            let now = ContinuousClock.now
            let accepting = listenFD >= 0 && (acceptPausedUntil.map { now >= $0 } ?? true)
            var fds = [wakePipe.pollRequest]
            if accepting { fds.append(pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)) }
            let first = fds.count
            for slot in slots {
                var events: Int16 = 0
                if slot.reading { events |= Int16(POLLIN) }
                if slot.connection.life.withLock({ $0.sent < $0.out.count }) { events |= Int16(POLLOUT) }
                fds.append(pollfd(fd: slot.connection.fd, events: events, revents: 0))
            }
            let wait = timeout(now)
            let ready = heartbeat.sleeping(timeout: wait) { poll(&fds, nfds_t(fds.count), wait) }
            if ready < 0 { continue }  // EINTR; nothing else is expected of valid descriptors
            if fds[0].revents != 0 { wakePipe.drain() }

            // Slots are only appended (by accept, below) or removed (by closeFinished, above) out of this pass.
            let count = fds.count - first
            for i in 0..<count {
                let revents = Int32(fds[first + i].revents)
                if revents == 0 { continue }
                if slots[i].reading, revents & Int32(POLLIN | POLLHUP | POLLERR) != 0 { read(i, into: &chunk) }
                if revents & Int32(POLLOUT) != 0 { flush(i) }
                if !slots[i].reading, revents & Int32(POLLHUP | POLLERR | POLLNVAL) != 0 { drop(i) }
            }
            expire(ContinuousClock.now)
            if accepting, fds[1].revents != 0 { acceptClients() }
        }
    }

    // MARK: Accepting

    private func acceptClients() {
        owner.assertCurrent()
        for _ in 0..<Self.acceptBatch {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 {
                switch errno {
                case EINTR, ECONNABORTED: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM: turnAwayWithoutDescriptors()
                default: break
                }
                return
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            admit(fd)
        }
    }

    private func admit(_ fd: Int32) {
        let peer = PeerCredentials.of(fd)
        let holders = slots.filter { !$0.connection.life.withLock(\.closing) }.map { slot in
            ControlAdmission.Holder(id: slot.connection.number, uid: slot.connection.uid,
                                    idle: !slot.sawLine && slot.reading && slot.connection.life.withLock { $0.pending == 0 && !$0.streaming })
        }
        switch ControlAdmission.decide(newcomer: peer?.uid, holders: holders, limits: limits) {
        case .admit:
            break
        case .admitEvicting(let id, let message):
            if let i = slots.firstIndex(where: { $0.connection.number == id }) { turnAway(i, message) }
        case .refuse(let message):
            Self.tell(fd, message)
            close(fd)
            return
        }
        number += 1
        let connection = ControlConnection(fd: fd, number: number, peer: peer) { [weak self] in self?.wake() }
        slots.append(Slot(connection: connection, since: .now))
        admitted.yield(connection)
    }

    /// Out of descriptors: the spare makes room to accept one client and tell it, then is taken back.
    private func turnAwayWithoutDescriptors() {
        guard spare >= 0 else {
            // Nothing to tell them with: try again shortly rather than spin on a listening socket that stays readable.
            acceptPausedUntil = .now + .milliseconds(100)
            return
        }
        close(spare)
        spare = -1
        let fd = accept(listenFD, nil, nil)
        if fd >= 0 {
            Self.tell(fd, "The satellite has no file descriptor left for another control connection. Try again in a moment; "
                + "if it keeps happening, see journalctl -u parlour-satellite.")
            close(fd)
        }
        spare = open("/dev/null", O_RDONLY | O_CLOEXEC)
    }

    /// Writes `message` as an error result straight to a socket that is about to close (a line fits its buffer).
    private static func tell(_ fd: Int32, _ message: String) {
        let line = Array((ControlResult.failure(.daemonUnavailable, message).line(id: .null) + "\n").utf8)
        _ = line.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
    }

    // MARK: Reading

    private func read(_ i: Int, into chunk: inout [UInt8]) {
        owner.assertCurrent()
        let fd = slots[i].connection.fd
        let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if n < 0, errno == EAGAIN || errno == EINTR { return }
        if n <= 0 {
            stopReading(i)
            return
        }
        var start = 0
        for j in 0..<n where chunk[j] == UInt8(ascii: "\n") {
            if slots[i].discarding {
                slots[i].discarding = false
            } else {
                slots[i].buffer.append(contentsOf: chunk[start..<j])
                if !slots[i].buffer.isEmpty { line(slots[i].buffer[...], on: slots[i].connection) }
            }
            slots[i].sawLine = true
            slots[i].buffer.removeAll(keepingCapacity: true)
            start = j + 1
        }
        if !slots[i].discarding {
            slots[i].buffer.append(contentsOf: chunk[start..<n])
            if slots[i].buffer.count > ControlProtocol.maxLineBytes {
                // Answer once and skip the rest of the line, without holding it in memory.
                slots[i].connection.send(ControlResult.failure(.invalidRequest,
                    "The request is longer than 64 KiB; send one JSON object of at most 64 KiB a line.").line(id: .null))
                slots[i].buffer = []
                slots[i].discarding = true
            }
        }
    }

    /// A bad line is answered here and never reaches the handler; no line can close the connection.
    private func line(_ bytes: ArraySlice<UInt8>, on connection: ControlConnection) {
        switch ControlProtocol.decode(bytes) {
        case .success(let request): connection.take(request)
        case .failure(let rejection): connection.send(ControlResult.error(rejection.error).line(id: rejection.id))
        }
    }

    private func stopReading(_ i: Int) {
        slots[i].reading = false
        slots[i].buffer = []
        slots[i].connection.endReading()
    }

    // MARK: Writing and closing

    private func flush(_ i: Int) {
        owner.assertCurrent()
        let fd = slots[i].connection.fd
        let written = slots[i].connection.life.withLock { l -> Int in
            guard l.sent < l.out.count else { return 0 }
            let n = l.out.withUnsafeBytes { send(fd, $0.baseAddress! + l.sent, l.out.count - l.sent, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if n < 0 { return errno == EAGAIN || errno == EINTR ? 0 : -1 }
            l.sent += n
            if l.sent == l.out.count {
                l.out = []
                l.sent = 0
            }
            return n
        }
        if written > 0 { slots[i].stalledSince = nil }
        if written < 0 { drop(i) }
    }

    /// The client went away or stopped reading: nothing more is written to it.
    private func drop(_ i: Int) {
        owner.assertCurrent()
        slots[i].connection.life.withLock {
            $0.out = []
            $0.sent = 0
            $0.closing = true
        }
        if slots[i].reading { stopReading(i) }
    }

    private func turnAway(_ i: Int, _ message: String) {
        Self.tell(slots[i].connection.fd, message)
        drop(i)
    }

    /// Closes every connection asked to close whose output is written.
    private func closeFinished() {
        owner.assertCurrent()
        slots.removeAll { slot in
            let done = slot.connection.life.withLock { l -> Bool in
                guard l.closing, l.sent >= l.out.count, !l.closed else { return false }
                l.closed = true
                return true
            }
            guard done else { return false }
            if slot.reading { slot.connection.endReading() }
            close(slot.connection.fd)
            return true
        }
    }

    /// Idle connections and clients that leave their output unread past their time.
    private func expire(_ now: ContinuousClock.Instant) {
        for i in slots.indices {
            if slots[i].reading, !slots[i].sawLine, now >= slots[i].since + limits.idle {
                turnAway(i, ControlAdmission.idleMessage(limits))
                continue
            }
            let waiting = slots[i].connection.life.withLock { $0.sent < $0.out.count }
            if !waiting {
                slots[i].stalledSince = nil
            } else if let since = slots[i].stalledSince {
                if now >= since + limits.sendTimeout { drop(i) }
            } else {
                slots[i].stalledSince = now
            }
            if slots[i].connection.life.withLock({ $0.out.count > Self.maxQueued }) { drop(i) }
        }
    }

    /// Milliseconds until the next deadline, -1 for none.
    private func timeout(_ now: ContinuousClock.Instant) -> Int32 {
        var next = acceptPausedUntil.flatMap { $0 > now ? $0 : nil }
        func consider(_ deadline: ContinuousClock.Instant) { next = min(next ?? deadline, deadline) }
        for slot in slots {
            if slot.reading, !slot.sawLine { consider(slot.since + limits.idle) }
            if let since = slot.stalledSince { consider(since + limits.sendTimeout) }
            else if slot.connection.life.withLock({ $0.sent < $0.out.count }) { consider(now + limits.sendTimeout) }
        }
        guard let next else { return -1 }
        let wait = now.duration(to: next)
        let ms = wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000 + 1
        return Int32(clamping: max(0, ms))
    }
}
