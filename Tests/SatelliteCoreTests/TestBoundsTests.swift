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

    @Test func theRecheckIsAMinuteUnlessATestAsksForOneToSixtySeconds() {
        #expect(TestBounds.recheckSeconds(nil) == 60)
        #expect(TestBounds.recheckSeconds("1") == 1)
        #expect(TestBounds.recheckSeconds("0") == 60, "a check in a loop with no pause")
        #expect(TestBounds.recheckSeconds("61") == 60)
        #expect(TestBounds.recheckSeconds("-5") == 60)
    }

    @Test func eachThreadKeepsItsOwnBoundUnlessATestAsksForOneToSixtySeconds() {
        #expect(TestBounds.turnSeconds(nil) == nil)
        #expect(TestBounds.turnSeconds("2") == 2)
        #expect(TestBounds.turnSeconds("0") == nil, "every thread late at once")
        #expect(TestBounds.turnSeconds("61") == nil)
        #expect(TestBounds.turnSeconds("soon") == nil)
    }

    @Test func aStalledThreadIsNamedInLowerCaseOrNotAtAll() {
        #expect(TestBounds.stalledThread(nil) == nil)
        #expect(TestBounds.stalledThread("") == nil)
        #expect(TestBounds.stalledThread("audio") == "audio")
        #expect(TestBounds.stalledThread("Audio") == nil)
        #expect(TestBounds.stalledThread("audio thread") == nil)
    }
}
