// The real avahi-daemon that scripts/netns-run starts beside the tests: its host
// name and address, and its stop/start control. A test that needs it fails with
// the way to run it when it is not there.
import Foundation

struct RealAvahi {
    let host: String
    let address: String
    private let control: String

    init() throws {
        let environment = ProcessInfo.processInfo.environment
        guard environment["PARLOUR_TEST_AVAHI"] == "1", let control = environment["PARLOUR_TEST_AVAHI_CTL"] else {
            throw TestFailure("""
                These tests need the real avahi-daemon on a private bus in a network namespace. \
                Run them through scripts/netns-run (as root), e.g. \
                `scripts/netns-run swift test --filter Discovery`, or run scripts/test.
                """)
        }
        self.control = control
        host = environment["PARLOUR_TEST_AVAHI_HOST"] ?? "den.local"
        address = environment["PARLOUR_TEST_AVAHI_ADDRESS"] ?? "198.51.100.1"
    }

    /// `stop` returns once avahi-daemon is gone, `start` once it serves again.
    func ctl(_ verb: String) async throws {
        try await Subprocess.check(control, [verb])
    }
}
