import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite struct TestBoundsTests {
    @Test func theDeadPeerTimeIsTenUnlessATestAsksForFourToTen() {
        #expect(TestBounds.deadPeerSeconds(nil) == 10)
        #expect(TestBounds.deadPeerSeconds("4") == 4)
        #expect(TestBounds.deadPeerSeconds("3") == 10, "below the ping time it would hang up before asking")
        #expect(TestBounds.deadPeerSeconds("11") == 10)
        #expect(TestBounds.deadPeerSeconds("soon") == 10)
    }
}
