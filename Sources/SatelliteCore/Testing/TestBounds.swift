// Time bounds the tests may set small, so a test of a 10 s timeout need not
// wait 10 s. They are read from the environment, are not config keys, and are
// for tests only: docs/architecture.md lists them. A value out of
// range or unreadable is ignored (the real bound applies).

/// A time bound that a test may shorten.
public enum TestBounds {
    /// `PARLOUR_SATELLITE_TEST_DEAD_PEER_S`: the /listen socket's dead-peer time, 4 to 10 whole seconds
    /// (the socket pings 3 s after the peer last sent anything, so less than 4 would hang up before it asks).
    public static let deadPeerVariable = "PARLOUR_SATELLITE_TEST_DEAD_PEER_S"

    /// The dead-peer seconds `value` asks for, or 10.
    public static func deadPeerSeconds(_ value: String?) -> Int64 {
        seconds(value, in: 4...10) ?? 10
    }

    /// `PARLOUR_SATELLITE_TEST_RECHECK_S`: how often a healthy server is checked again, 1 to 60 whole seconds.
    public static let recheckVariable = "PARLOUR_SATELLITE_TEST_RECHECK_S"

    /// The recheck seconds `value` asks for, or 60.
    public static func recheckSeconds(_ value: String?) -> Int64 {
        seconds(value, in: 1...60) ?? 60
    }

    /// `PARLOUR_SATELLITE_TEST_TURN_S`: the most any thread may go without turning before the watchdog
    /// holds back WATCHDOG=1, 1 to 60 whole seconds (a thread's own bound when smaller).
    public static let turnVariable = "PARLOUR_SATELLITE_TEST_TURN_S"

    /// The bound `value` asks for, or nil (each thread's own).
    public static func turnSeconds(_ value: String?) -> Int64? {
        seconds(value, in: 1...60)
    }

    /// `PARLOUR_SATELLITE_TEST_STALL`: the thread (by its name: `main`, `audio`, `control`, …) that stops
    /// turning once the watchdog has sent WATCHDOG=1 three times, as if stuck in a call: for the tests of
    /// the watchdog, which see the daemon named and restarted.
    public static let stallVariable = "PARLOUR_SATELLITE_TEST_STALL"

    /// The thread `value` names, or nil: a name is lower-case letters only.
    public static func stalledThread(_ value: String?) -> String? {
        guard let value, !value.isEmpty, value.allSatisfy({ ("a"..."z").contains($0) }) else { return nil }
        return value
    }

    private static func seconds(_ value: String?, in range: ClosedRange<Int64>) -> Int64? {
        guard let value, let seconds = Int64(value), range.contains(seconds) else { return nil }
        return seconds
    }
}
