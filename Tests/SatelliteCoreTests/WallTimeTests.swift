// WallTime against FoundationEssentials' Date and its ISO 8601 style, which it
// replaced in the daemon: pin.json written before must read back the same.
import Foundation
import SatelliteCore
import Testing

@Suite("WallTime writes and reads ISO 8601 as Date did")
struct WallTimeTests {
    @Test("written as Date wrote it, across years, leap days and month ends")
    func written() {
        var seconds: Int64 = 0
        while seconds < 4_102_444_800 {  // to 2100
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            #expect(WallTime(seconds: seconds).iso8601 == date.formatted(.iso8601), "\(seconds)")
            seconds += 86_400 * 13 + 3_607
        }
        #expect(WallTime(seconds: 951_782_400).iso8601 == "2000-02-29T00:00:00Z")
    }

    @Test("read as Date read it: with fractions, with an offset, or not at all", arguments: [
        "2024-05-01T12:00:00Z", "2024-05-01T14:00:00+02:00", "2024-05-01T07:30:00-0430", "2024-05-01T12:00:00.25Z",
        "2024-05-01T12:00:00.999999+00:00", "2024-02-29T23:59:59Z", "1970-01-01T00:00:00Z",
    ])
    func read(_ text: String) throws {
        let date = try (try? Date(text, strategy: .iso8601)) ?? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        #expect(WallTime(iso8601: text)?.seconds == Int64(date.timeIntervalSince1970.rounded(.down)))
    }

    @Test("what is not a date and time is none", arguments: [
        "", "2024-05-01", "2024-05-01T12:00:00", "2024-05-01 12:00:00Z", "2024-13-01T12:00:00Z", "2023-02-29T12:00:00Z",
        "2024-04-31T12:00:00Z", "2024-05-01T24:00:00Z", "2024-05-01T12:60:00Z", "2024-05-01T12:00:00.Z",
        "2024-05-01T12:00:00Zjunk", "2024-05-01T12:00:00+2", "２０２４-05-01T12:00:00Z", "yesterday",
    ])
    func refused(_ text: String) {
        #expect(WallTime(iso8601: text) == nil)
    }

    @Test("now is what Date says")
    func now() {
        let before = Int64(Date().timeIntervalSince1970)
        let now = WallTime.now().seconds
        #expect(now >= before && now <= Int64(Date().timeIntervalSince1970))
    }
}
