// A room the test can speak into: a FIFO that the paced test microphone reads,
// kept about 200 ms ahead with silence by a thread of its own, into which the
// test drops speech when it chooses. Easy to get wrong: a blocking open or write
// on a FIFO must never hold the cooperative pool (two threads here), and the
// daemon closes and reopens the microphone, so the FIFO is held read-write and
// non-blocking, and the lead is measured by what is still in the pipe. A `live`
// room goes on at real time whether or not the microphone is open: what is
// said while nobody reads is gone, as it would be in a real room. A `timed`
// room places what is said where a real microphone would have it: the pipe's
// lead alone would put it after whatever the reader last took, so a word said
// just before a 120 ms read and one said just after it would be heard up to a
// period apart; it is padded by the time since that read, so every timed room
// hears it a steady lead after it was said, as rooms of one house do.
import Foundation
import Glibc
import Synchronization

final class MicFeeder: Sendable {
    let path: String
    private let state = Mutex(State())
    private let fd: Int32
    private let live: Bool
    private let timed: Bool

    private struct State {
        var queue: [UInt8] = []
        /// When the reader last took from the pipe (CLOCK_MONOTONIC ns), as the pump saw it.
        var lastRead: UInt64?
        /// Timed: when what the queue starts with was said, until the pump places it.
        var saidAt: UInt64?
        var stopped = false
        /// Waiting for what was said to have gone into the pipe (`drained`).
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// How much the pipe holds ahead of the reader: 200 ms of 16 kHz s16le.
    static let lead = 6400

    init(path: String, live: Bool = false, timed: Bool = false) throws {
        self.path = path
        self.live = live
        self.timed = timed && !live
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
        let now = Self.now()
        state.withLock { s in
            if timed && s.queue.isEmpty { s.saidAt = now }
            s.queue.append(contentsOf: audio)
        }
    }

    private static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
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
        // What the pipe held after the last write: less at the next look means the reader took some.
        var left = 0
        while !state.withLock({ $0.stopped }) {
            var queued: Int32 = 0
            _ = ioctl(fd, UInt(FIONREAD), &queued)
            if Int(queued) < left {
                let now = Self.now()
                state.withLock { $0.lastRead = now }
            }
            left = Int(queued)
            if Int(queued) >= Self.lead {
                usleep(5000)
                continue
            }
            let speech: [UInt8] = state.withLock { s in
                if let said = s.saidAt {
                    s.queue.insert(contentsOf: [UInt8](repeating: 0, count: Self.pad(said: said, lastRead: s.lastRead, inPipe: left)), at: 0)
                    s.saidAt = nil
                }
                let n = min(640, s.queue.count)
                return Array(s.queue[..<n])
            }
            let chunk = speech.isEmpty ? silence : speech
            let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written <= 0 {
                usleep(5000)
                continue
            }
            left += written
            if !speech.isEmpty {
                state.withLock { $0.queue.removeFirst(written) }
                wakeWaiters()
            }
        }
    }

    /// The silence to put before what was said at `said` so that the reader, which last took from the
    /// pipe at `lastRead` and has `inPipe` bytes ahead of it, hears it a full lead after it was said (a
    /// reader gone for longer than a period or two is no reader to keep time with).
    private static func pad(said: UInt64, lastRead: UInt64?, inPipe: Int) -> Int {
        guard let lastRead, said + 250_000_000 > lastRead, said < lastRead + 250_000_000 else { return 0 }
        let sinceMs = (Int64(said) - Int64(lastRead)) / 1_000_000
        return max(Int(sinceMs) * 32 + lead - inPipe, 0) & ~1
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
