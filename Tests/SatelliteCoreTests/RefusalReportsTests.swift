import Testing
@testable import SatelliteCore

@Suite("refusals told to the journal")
struct RefusalReportsTests {
    @Test("the first at once, then what came since at most once a minute, and nothing when nothing came")
    func paced() {
        var reports = RefusalReports()
        #expect(reports.due(total: [:], nowMs: 5) == nil)
        #expect(reports.dueMs(total: [:]) == nil)
        #expect(reports.due(total: [.forged: 1], nowMs: 10) == [.forged: 1])
        #expect(reports.dueMs(total: [.forged: 1]) == nil)
        // A flood within the minute waits for it.
        #expect(reports.due(total: [.forged: 900, .oversized: 5], nowMs: 59_999) == nil)
        #expect(reports.dueMs(total: [.forged: 900, .oversized: 5]) == 60_010)
        #expect(reports.due(total: [.forged: 900, .oversized: 5], nowMs: 60_010) == [.forged: 899, .oversized: 5])
        #expect(reports.due(total: [.forged: 900, .oversized: 5], nowMs: 500_000) == nil)
        #expect(reports.due(total: [.forged: 901, .oversized: 5], nowMs: 500_000) == [.forged: 1])
    }

    @Test("at any uptime: a report near the clock's end is never due before it")
    func farUptime() {
        var reports = RefusalReports()
        let late = UInt64.max - 10
        #expect(reports.due(total: [.stale: 1], nowMs: late) == [.stale: 1])
        #expect(reports.dueMs(total: [.stale: 2]) == .max)
        #expect(reports.due(total: [.stale: 2], nowMs: late + 5) == nil)
    }

    @Test("the reasons in the decoder's order")
    func text() {
        #expect(RefusalReports.text([.stale: 1, .forged: 3, .oversized: 2]) == "2 oversized, 3 forged, 1 stale")
    }
}
