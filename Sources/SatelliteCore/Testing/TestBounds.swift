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
        guard let value, let seconds = Int64(value), (4...10).contains(seconds) else { return 10 }
        return seconds
    }
}
