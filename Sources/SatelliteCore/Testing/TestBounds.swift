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

    private static func seconds(_ value: String?, in range: ClosedRange<Int64>) -> Int64? {
        guard let value, let seconds = Int64(value), range.contains(seconds) else { return nil }
        return seconds
    }
}
