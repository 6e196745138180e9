// CLOCK_MONOTONIC in nanoseconds, for the debug notices that let a benchmark
// time the satellite from outside. Other processes (scripts/bench, Python's
// time.monotonic_ns) read this same clock, so their stamps and ours compare;
// the Instants of Swift's own clocks are opaque and cannot be printed as such.
import Glibc

enum MonotonicClock {
    /// Nanoseconds on CLOCK_MONOTONIC (since boot, not counting suspend).
    static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// `duration` in nanoseconds, to add to a reading (not negative).
    static func nanoseconds(in duration: Duration) -> UInt64 {
        UInt64(duration.components.seconds) * 1_000_000_000 + UInt64(duration.components.attoseconds / 1_000_000_000)
    }
}
