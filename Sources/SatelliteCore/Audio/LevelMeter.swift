// The live input level `parlourctl setup` shows, so the person sees the
// microphone hear them: the daemon cuts what it hears into 100 ms windows and
// sends each one's level as an event; parlourctl draws it as a bar. The words
// and the bar are MeterText's (ControlCore), which reads these keys back.

/// Windows of microphone audio, their levels, and how they are shown.
public struct LevelMeter: Sendable, Equatable {
    /// Samples per level event: 100 ms at 16 kHz.
    public static let window = 1600

    /// Everything heard so far.
    public private(set) var total = SignalLevel()
    private var current = SignalLevel()
    /// The RMS of the loudest window so far.
    public private(set) var loudestDBFS = SignalLevel.floorDBFS

    public init() {}

    /// Adds samples; returns the level of each window they completed.
    public mutating func add(_ samples: [Int16]) -> [SignalLevel] {
        total.add(samples)
        var done: [SignalLevel] = []
        var rest = samples[...]
        while !rest.isEmpty {
            let taken = rest.prefix(Self.window - current.count)
            current.add(taken)
            rest = rest.dropFirst(taken.count)
            if current.count == Self.window {
                loudestDBFS = max(loudestDBFS, current.rmsDBFS)
                done.append(current)
                current = SignalLevel()
            }
        }
        return done
    }

    /// The `level` event for one window (without `v`).
    public static func event(_ level: SignalLevel) -> JSONValue {
        ["event": "level", "rms": .number(SignalLevel.rounded(level.rmsDBFS)), "peak": .number(SignalLevel.rounded(level.peakDBFS))]
    }

    /// The `meter` result: how long it listened, the whole stretch's RMS and peak, the loudest
    /// window, and the verdict (`SignalLevel.Verdict`).
    public var result: JSONValue {
        ["seconds": .number(SignalLevel.rounded(Double(total.count) / 16000)),
         "rms": .number(SignalLevel.rounded(total.rmsDBFS)), "peak": .number(SignalLevel.rounded(total.peakDBFS)),
         "loudest": .number(SignalLevel.rounded(loudestDBFS)), "signal": .string(total.verdict.rawValue)]
    }
}
