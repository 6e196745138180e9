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
        return nanoseconds(of: now)
    }

    /// A reading in nanoseconds: exact to 584 years of uptime.
    static func nanoseconds(of reading: timespec) -> UInt64 {
        UInt64(reading.tv_sec) * 1_000_000_000 + UInt64(reading.tv_nsec)
    }

    /// `duration` in nanoseconds, to add to a reading: 0 for a negative one, and at most 2^32 s
    /// (136 years, a "for ever" that cannot overflow the sum).
    static func nanoseconds(in duration: Duration) -> UInt64 {
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        return UInt64(min(seconds, 1 << 32)) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }

    /// poll's timeout to wake by `deadline` at the latest, from `now`: rounded up to a millisecond,
    /// at most a minute. One piece for the loops that sleep in poll.
    static func pollTimeout(until deadline: UInt64, from now: UInt64) -> Int32 {
        guard deadline > now else { return 0 }
        // Rounded up without adding to the difference, which may be as large as UInt64 holds (a `.max` "never").
        let wait = deadline - now
        return Int32(min(wait / 1_000_000 + (wait % 1_000_000 == 0 ? 0 : 1), 60_000))
    }
}
