// A room the test can speak into: a FIFO that the paced test microphone reads,
// kept about 200 ms ahead with silence by a thread of its own, into which the
// test drops speech when it chooses. Easy to get wrong: a blocking open or write
// on a FIFO must never hold the cooperative pool (two threads here), and the
// daemon closes and reopens the microphone, so the FIFO is held read-write and
// non-blocking, and the lead is measured by what is still in the pipe. A `live`
// room goes on at real time whether or not the microphone is open: what is
// said while nobody reads is gone, as it would be in a real room.
import Foundation
import Glibc
import Synchronization

final class MicFeeder: Sendable {
    let path: String
    private let state = Mutex(State())
    private let fd: Int32
    private let live: Bool

    private struct State {
        var queue: [UInt8] = []
        var stopped = false
        /// Waiting for what was said to have gone into the pipe (`drained`).
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// How much the pipe holds ahead of the reader: 200 ms of 16 kHz s16le.
    static let lead = 6400

    init(path: String, live: Bool = false) throws {
        self.path = path
        self.live = live
        guard mkfifo(path, 0o600) == 0 else { throw TestFailure("mkfifo \(path): \(String(cString: strerror(errno)))") }
        // Read-write: never blocks on open, and a reader that goes away is no EPIPE.
        fd = open(path, O_RDWR | O_NONBLOCK)
        guard fd >= 0 else { throw TestFailure("open \(path): \(String(cString: strerror(errno)))") }
        let thread = Thread { [self] in self.pump() }
        thread.name = "mic-feeder"
        thread.start()
    }

    /// Puts raw s16le audio into the room, after what is queued. It does not wait: once the
    /// daemon closes the microphone, the rest is never read.
    func say(_ audio: Data) {
        state.withLock { $0.queue.append(contentsOf: audio) }
    }

    func stop() {
        state.withLock { $0.stopped = true }
        wakeWaiters(all: true)
    }

    /// Returns once everything said so far has gone into the pipe (in a live room: has been said;
    /// what nobody read is gone).
    func drained() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s in
                if s.queue.isEmpty || s.stopped { return true }
                s.waiters.append(waiter)
                return false
            }
            if now { waiter.resume() }
        }
    }

    private func wakeWaiters(all: Bool = false) {
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            guard all || s.queue.isEmpty else { return [] }
            defer { s.waiters.removeAll() }
            return s.waiters
        }
        for waiter in ready { waiter.resume() }
    }

    private func pump() {
        if live { return pumpLive() }
        let silence = [UInt8](repeating: 0, count: 640)
        defer { close(fd) }
        while !state.withLock({ $0.stopped }) {
            var queued: Int32 = 0
            _ = ioctl(fd, UInt(FIONREAD), &queued)
            if Int(queued) >= Self.lead {
                usleep(5000)
                continue
            }
            let speech: [UInt8] = state.withLock { s in
                let n = min(640, s.queue.count)
                return Array(s.queue[..<n])
            }
            let chunk = speech.isEmpty ? silence : speech
            let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written <= 0 {
                usleep(5000)
                continue
            }
            if !speech.isEmpty {
                state.withLock { $0.queue.removeFirst(written) }
                wakeWaiters()
            }
        }
    }

    /// 20 ms of the room every 20 ms of wall time, into the pipe while it holds less than the
    /// lead, and dropped when it does not (nobody is listening).
    private func pumpLive() {
        let silence = [UInt8](repeating: 0, count: 640)
        defer { close(fd) }
        var next = ContinuousClock.now
        while !state.withLock({ $0.stopped }) {
            let speech: [UInt8] = state.withLock { s in
                let n = min(640, s.queue.count)
                defer { s.queue.removeFirst(n) }
                return Array(s.queue[..<n])
            }
            if !speech.isEmpty { wakeWaiters() }
            var chunk = silence
            chunk.replaceSubrange(0..<speech.count, with: speech)
            var queued: Int32 = 0
            _ = ioctl(fd, UInt(FIONREAD), &queued)
            if Int(queued) < Self.lead {
                _ = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            }
            next += .milliseconds(20)
            let wait = next - ContinuousClock.now
            if wait > .zero { usleep(UInt32(wait.components.attoseconds / 1_000_000_000_000)) }
        }
    }
}
