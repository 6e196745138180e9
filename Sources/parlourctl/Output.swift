// Writing text to a file descriptor (standard output, standard error, the
// terminal), what FileHandle did: parlourctl links no Foundation at all
// (BENCHMARKS.md, "What each binary weighs").
import Glibc

enum Output {
    static func out(_ text: String) { write(text, to: 1) }
    static func err(_ text: String) { write(text, to: 2) }

    /// Writes all of `text`, going on after a signal or a short write; stops at an error
    /// (a closed pipe is EPIPE, since parlourctl ignores SIGPIPE).
    static func write(_ text: String, to fd: Int32) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            bytes = bytes.dropFirst(n)
        }
    }
}
