// A FIFO that programs a test starts (a state hook) write lines into, and whose
// lines the test awaits: no polling of files, no sleeps. The test holds it
// read-write, so a writer's open never blocks and the reader never sees the end;
// the reading thread is ended by a line of its own.
import Foundation
import Glibc
import Synchronization

final class LineFIFO: Sendable {
    let path: String
    let lines: AsyncStream<String>
    private let fd: Int32
    private let stopped = Atomic<Bool>(false)
    private static let end = "\u{4}end-of-line-fifo"

    init(path: String) throws {
        self.path = path
        guard mkfifo(path, 0o600) == 0 else { throw TestFailure("mkfifo \(path): \(String(cString: strerror(errno)))") }
        let fd = open(path, O_RDWR)
        guard fd >= 0 else { throw TestFailure("open \(path): \(String(cString: strerror(errno)))") }
        self.fd = fd
        let (lines, continuation) = AsyncStream.makeStream(of: String.self)
        self.lines = lines
        let thread = Thread {
            var buffer: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            reading: while true {
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                buffer.append(contentsOf: chunk[..<n])
                while let newline = buffer.firstIndex(of: 10) {
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    buffer.removeSubrange(...newline)
                    if line == Self.end { break reading }
                    continuation.yield(line)
                }
            }
            close(fd)
            continuation.finish()
        }
        thread.name = "line-fifo"
        thread.start()
    }

    /// Ends the reading thread and the stream of lines.
    func stop() {
        // Once only: the thread closes the descriptor when it reads this line.
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let line = Array((Self.end + "\n").utf8)
        _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    deinit { stop() }
}
