// A pipe that wakes a thread asleep in poll: one piece for the loops that sleep
// so (AudioEngine, ControlLoop, HTTPLoop, and Signals' thread, whose handler
// writes the signal's number). Glibc's module has no eventfd. Both ends are
// non-blocking: a full pipe is already a wake-up, and draining it never waits.
import Glibc

struct WakePipe: Sendable {
    /// The end to poll for POLLIN.
    let readEnd: Int32
    /// For a signal handler, which can hold a descriptor but not this value; others call `wake()`.
    let writeEnd: Int32

    /// nil when no pipe could be made (errno says why: out of descriptors).
    init?() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        (readEnd, writeEnd) = (ends[0], ends[1])
    }

    /// The read end, as poll wants it.
    var pollRequest: pollfd { pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0) }

    /// Wakes the thread. Any thread.
    func wake() {
        var one: UInt8 = 1
        _ = write(writeEnd, &one, 1)
    }

    /// Takes every wake-up waiting, so the next poll sleeps. No allocation: the audio thread calls it.
    func drain() {
        var bytes = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while withUnsafeMutableBytes(of: &bytes, { read(readEnd, $0.baseAddress, $0.count) }) > 0 {}
    }
}
