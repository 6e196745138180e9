// The durations the loops add to a clock reading: never negative, never an overflow.
import Testing
@testable import Satellite

@Suite struct MonotonicClockTests {
    @Test("a duration in nanoseconds: a negative one is 0, and \"for ever\" is held to 136 years rather than trapping")
    func nanoseconds() {
        #expect(MonotonicClock.nanoseconds(in: .milliseconds(1500)) == 1_500_000_000)
        #expect(MonotonicClock.nanoseconds(in: .nanoseconds(7)) == 7)
        #expect(MonotonicClock.nanoseconds(in: .seconds(-3)) == 0)
        #expect(MonotonicClock.nanoseconds(in: .zero) == 0)
        let forever = MonotonicClock.nanoseconds(in: .seconds(Int64.max))
        #expect(forever == (1 << 32) * 1_000_000_000)
        #expect(MonotonicClock.nanoseconds() &+ forever > forever, "the sum with a reading does not wrap")
    }
}
