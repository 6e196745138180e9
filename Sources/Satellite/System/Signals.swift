// SIGTERM and SIGINT as an AsyncStream. A plain handler writes the signal's
// number to a pipe and one thread reads it: a handler works whichever thread
// the kernel picks, where a signal ignored in one thread and waited for in
// another can be discarded (the main thread's mask is not ours to keep: the
// runtime clears it). main.swift blocks the signals before anything starts, so
// one that comes before the handler is in place stays pending, not fatal.
// SIGPIPE is ignored: a client that goes away while the daemon writes to it is
// an error on that write, not a death.
import Glibc

public enum Signals {
    /// The pipe's write end, set once before any handler is installed; the handler only reads it.
    nonisolated(unsafe) private static var writeEnd: Int32 = -1

    /// Blocks `numbers` in the calling thread, and in every thread it starts later. Call first thing in main.
    public static func block(_ numbers: [Int32]) {
        var set = sigset(numbers)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Each of `numbers` as it arrives. Call once.
    public static func watch(_ numbers: [Int32]) -> AsyncStream<Int32> {
        signal(SIGPIPE, SIG_IGN)
        // Non-blocking, so a handler can never hang on a full pipe.
        guard let pipe = WakePipe() else { preconditionFailure("pipe: \(errno)") }
        writeEnd = pipe.writeEnd
        let readEnd = pipe.readEnd
        for number in numbers {
            signal(number) { received in
                var byte = UInt8(truncatingIfNeeded: received)
                _ = write(Signals.writeEnd, &byte, 1)  // write(2) is async-signal-safe
            }
        }
        var set = sigset(numbers)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        SystemThread.start(name: "signals") {
            var poll = pipe.pollRequest
            let heartbeat = Heartbeat("signals", serves: "SIGTERM (systemctl stop)", bound: .seconds(10)) { pipe.wake() }
            while true {
                var byte: UInt8 = 0
                let count = read(readEnd, &byte, 1)
                if count == 1 {
                    if case .terminated = continuation.yield(Int32(byte)) { return }
                } else if count < 0, errno == EAGAIN {
                    _ = heartbeat.sleeping(timeout: -1) { Glibc.poll(&poll, 1, -1) }
                }
            }
        }
        return stream
    }

    private static func sigset(_ numbers: [Int32]) -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for number in numbers { sigaddset(&set, number) }
        return set
    }
}
