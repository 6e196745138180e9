// The clock readings and the durations the loops add to them: never negative, never an
// overflow, from boot to 100 years up and past.
import Glibc
import Testing
@testable import Satellite

@Suite struct MonotonicClockTests {
    static let second: UInt64 = 1_000_000_000
    static let century: UInt64 = 100 * 365 * 86_400 * second

    @Test("a duration in nanoseconds: a negative one is 0, and \"for ever\" is held to 136 years rather than trapping")
    func nanoseconds() {
        #expect(MonotonicClock.nanoseconds(in: .milliseconds(1500)) == 1_500_000_000)
        #expect(MonotonicClock.nanoseconds(in: .nanoseconds(7)) == 7)
        #expect(MonotonicClock.nanoseconds(in: .seconds(-3)) == 0)
        #expect(MonotonicClock.nanoseconds(in: .zero) == 0)
        let forever = MonotonicClock.nanoseconds(in: .seconds(Int64.max))
        #expect(forever == (1 << 32) * 1_000_000_000)
        #expect(MonotonicClock.nanoseconds() &+ forever > forever, "the sum with a reading does not wrap")
        #expect(Self.century + forever > Self.century, "nor at 100 years up")
    }

    @Test("a reading in nanoseconds, at boot, at 8, 25 and 50 days, 100 years, and the last second UInt64 holds",
          arguments: [0, 8 * 86_400, 25 * 86_400, 50 * 86_400, century / second, UInt64.max / second - 1] as [UInt64])
    func reading(seconds: UInt64) {
        let reading = timespec(tv_sec: Int(seconds), tv_nsec: 999_999_999)
        #expect(MonotonicClock.nanoseconds(of: reading) == seconds * Self.second + 999_999_999)
    }

    @Test("poll's timeout: rounded up to a millisecond, at most a minute, 0 once due, at any uptime",
          arguments: [0, 8 * 86_400 * second, 25 * 86_400 * second, 50 * 86_400 * second, century] as [UInt64])
    func pollTimeout(now: UInt64) {
        #expect(MonotonicClock.pollTimeout(until: now, from: now) == 0)
        #expect(MonotonicClock.pollTimeout(until: now + 1, from: now) == 1)
        #expect(MonotonicClock.pollTimeout(until: now + 1_000_000, from: now) == 1)
        #expect(MonotonicClock.pollTimeout(until: now + 1_000_001, from: now) == 2)
        #expect(MonotonicClock.pollTimeout(until: now + 59 * Self.second, from: now) == 59_000)
        // Past Int32's milliseconds (24.9 days) and UInt32's (49.7 days) ahead: a minute, then look again.
        #expect(MonotonicClock.pollTimeout(until: now + 50 * 86_400 * Self.second, from: now) == 60_000)
        #expect(MonotonicClock.pollTimeout(until: .max, from: now) == 60_000)
        #expect(MonotonicClock.pollTimeout(until: now + MonotonicClock.nanoseconds(in: .seconds(Int64.max)), from: now) == 60_000)
        if now > 0 { #expect(MonotonicClock.pollTimeout(until: now - 1, from: now) == 0, "a deadline passed") }
    }
}
