// When the journal hears of the datagrams refused on the arbitration port: the
// first refusal at once, then what was refused since, at most once a
// `intervalMs`, so a flood costs a record a minute and never one a datagram.

public struct RefusalReports: Sendable, Equatable {
    public static let intervalMs: UInt64 = 60_000

    /// The totals last reported.
    private var reported: [ClaimRefusal: Int] = [:]
    /// When the last report was made, on the monotonic clock.
    private var lastMs: UInt64?

    public init() {}

    /// The refusals since the last report, by reason, when there are some and a report is due at `nowMs`;
    /// `total` is every refusal so far (SiblingClaims.refused).
    public mutating func due(total: [ClaimRefusal: Int], nowMs: UInt64) -> [ClaimRefusal: Int]? {
        let new = Self.since(reported, total)
        guard !new.isEmpty, next(after: lastMs) <= nowMs else { return nil }
        reported = total
        lastMs = nowMs
        return new
    }

    /// When a report falls due for refusals not yet reported; nil when none wait.
    public func dueMs(total: [ClaimRefusal: Int]) -> UInt64? {
        Self.since(reported, total).isEmpty ? nil : next(after: lastMs)
    }

    private func next(after last: UInt64?) -> UInt64 {
        guard let last else { return 0 }
        let (sum, overflow) = last.addingReportingOverflow(Self.intervalMs)
        return overflow ? .max : sum
    }

    private static func since(_ before: [ClaimRefusal: Int], _ now: [ClaimRefusal: Int]) -> [ClaimRefusal: Int] {
        now.reduce(into: [:]) { new, entry in
            let count = entry.value - before[entry.key, default: 0]
            if count > 0 { new[entry.key] = count }
        }
    }

    /// "3 forged, 1 stale", in ClaimRefusal's order.
    public static func text(_ counts: [ClaimRefusal: Int]) -> String {
        ClaimRefusal.allCases.compactMap { reason in counts[reason].map { "\($0) \(reason.rawValue)" } }.joined(separator: ", ")
    }
}
