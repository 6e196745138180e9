// A room the test can speak into: a FIFO that the paced test microphone reads,
// kept about 200 ms ahead with silence by a thread of its own, into which the
// test drops speech when it chooses. Easy to get wrong: a blocking open or write
// on a FIFO must never hold the cooperative pool (two threads here), and the
// daemon closes and reopens the microphone, so the FIFO is held read-write and
// non-blocking, and the lead is measured by what is still in the pipe.
import Foundation
import Glibc
import Synchronization

final class MicFeeder: Sendable {
    let path: String
    private let state = Mutex(State())
    private let fd: Int32

    private struct State {
        var queue: [UInt8] = []
        var stopped = false
    }

    /// How much the pipe holds ahead of the reader: 200 ms of 16 kHz s16le.
    static let lead = 6400

    init(path: String) throws {
        self.path = path
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
    }

    private func pump() {
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
            if !speech.isEmpty { state.withLock { $0.queue.removeFirst(written) } }
        }
    }
}
