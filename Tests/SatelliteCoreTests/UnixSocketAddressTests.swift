import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("Unix socket addresses")
struct UnixSocketAddressTests {
    @Test("a path that fits is taken, one that does not is refused rather than cut short")
    func length() {
        #expect(UnixSocketAddress("/run/parlour-satellite/control.sock") != nil)
        #expect(UnixSocketAddress("/" + String(repeating: "a", count: 106)) != nil)
        #expect(UnixSocketAddress("/" + String(repeating: "a", count: 107)) == nil)
    }
}
