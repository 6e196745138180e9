// A mixer control's raw range as the percentage people say. Linear in the raw
// value, as `amixer sset Master 50%` is, so the two agree. Easy to get wrong: a
// control whose range is under 100 steps cannot hold every percentage, so a set
// value may read back a step away (the result says what the card holds), and
// the range need not start at 0 (many cards count in hundredths of a dB, from
// below zero).

/// The raw range of a mixer control, and the mapping to and from percent.
public struct VolumeScale: Sendable, Equatable {
    public let min: Int
    public let max: Int

    /// nil when the range is empty or upside down.
    public init?(min: Int, max: Int) {
        guard max > min else { return nil }
        self.min = min
        self.max = max
    }

    /// The raw value for `percent` (clamped to 0...100), to the nearest step.
    public func raw(percent: Int) -> Int {
        let clamped = Swift.min(Swift.max(percent, 0), 100)
        return min + Int((Double(clamped) * Double(max - min) / 100).rounded())
    }

    /// The percentage for `raw` (clamped to the range), to the nearest whole percent.
    public func percent(raw: Int) -> Int {
        let clamped = Swift.min(Swift.max(raw, min), max)
        return Int((Double(clamped - min) * 100 / Double(max - min)).rounded())
    }
}
