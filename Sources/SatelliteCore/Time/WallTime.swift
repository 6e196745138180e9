// A moment by the wall clock, in whole seconds of UTC: when a server was
// pinned, when the state changed, what the clock says for doctor. Written
// as ISO 8601 ("2026-12-06T15:40:00Z") and read with or without fractions
// and with an offset, as FoundationEssentials' Date did before the daemon
// stopped linking it (BENCHMARKS.md, "What each binary weighs");
// the calendar is glibc's (timegm, gmtime_r).
import Glibc

public struct WallTime: Sendable, Hashable, Comparable {
    /// Seconds since 1970-01-01T00:00:00Z.
    public var seconds: Int64

    public init(seconds: Int64) { self.seconds = seconds }

    /// What the clock says now.
    public static func now() -> WallTime {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return WallTime(seconds: Int64(now.tv_sec))
    }

    public static func < (a: WallTime, b: WallTime) -> Bool { a.seconds < b.seconds }

    /// `yyyy-MM-ddTHH:mm:ssZ`.
    public var iso8601: String {
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "\(seconds)" }
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let year = Int(parts.tm_year) + 1900
        let yearText = year >= 0 && year < 1000 ? String(repeating: "0", count: 4 - "\(year)".count) + "\(year)" : "\(year)"
        return "\(yearText)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    /// Reads `yyyy-MM-ddTHH:mm:ss`, then optional fractions of a second (dropped), then `Z`,
    /// `±HH:mm` or `±HHmm`; nil for anything else.
    public init?(iso8601 text: String) {
        var rest = Substring(text).utf8[...]
        func number(_ width: Int) -> Int? {
            guard rest.count >= width else { return nil }
            var value = 0
            for byte in rest.prefix(width) {
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            rest = rest.dropFirst(width)
            return value
        }
        func take(_ byte: UInt8) -> Bool {
            guard rest.first == byte else { return false }
            rest = rest.dropFirst()
            return true
        }
        guard let year = number(4), take(0x2D), let month = number(2), take(0x2D), let day = number(2),
              take(0x54), let hour = number(2), take(0x3A), let minute = number(2), take(0x3A), let second = number(2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        if take(0x2E) {
            guard rest.first.map({ $0 >= 0x30 && $0 <= 0x39 }) == true else { return nil }
            while let byte = rest.first, byte >= 0x30 && byte <= 0x39 { rest = rest.dropFirst() }
        }
        var offset = 0
        if take(0x5A) {
            offset = 0
        } else if let sign = rest.first, sign == 0x2B || sign == 0x2D {
            rest = rest.dropFirst()
            guard let hours = number(2) else { return nil }
            _ = take(0x3A)
            guard let minutes = number(2), hours < 24, minutes < 60 else { return nil }
            offset = (hours * 60 + minutes) * 60 * (sign == 0x2D ? -1 : 1)
        } else {
            return nil
        }
        guard rest.isEmpty else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let utc = timegm(&parts)
        // timegm rolls 31 February over into March: such a date is not one.
        guard parts.tm_mday == Int32(day), parts.tm_mon == Int32(month - 1) else { return nil }
        seconds = Int64(utc) - Int64(offset)
    }
}
