// SIGTERM and SIGINT as an AsyncStream. The signals are blocked from their
// default action and registered before anything else starts, so an early
// SIGTERM from systemd is not missed. SIGPIPE is ignored: a client that goes
// away while the daemon writes to it is an error on that write, not a death.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import Dispatch

public enum Signals {
    public static func watch(_ numbers: [Int32]) -> AsyncStream<Int32> {
        signal(SIGPIPE, SIG_IGN)
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        var sources: [DispatchSourceSignal] = []
        for number in numbers {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            sources.append(source)
        }
        // A parent may have started us with these signals blocked (Foundation's Process
        // passes on the spawning thread's mask); unblock them or SIGTERM would never arrive.
        var unblock = sigset_t()
        sigemptyset(&unblock)
        for number in numbers { sigaddset(&unblock, number) }
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
        let keep = SourceHolder(sources)
        continuation.onTermination = { _ in keep.cancel() }
        return stream
    }

    /// Keeps the dispatch sources alive as long as the stream is.
    private final class SourceHolder: @unchecked Sendable {
        // Only touched at creation and on termination, never at the same time.
        private let sources: [DispatchSourceSignal]
        init(_ sources: [DispatchSourceSignal]) { self.sources = sources }
        func cancel() { sources.forEach { $0.cancel() } }
    }
}
