// The live input level `parlourctl setup` shows, so the person sees the
// microphone hear them: the daemon cuts what it hears into 100 ms windows and
// sends each one's level as an event; parlourctl draws it as a bar. Both ends
// use this one type, so the event, the result and the words cannot drift apart.
import Foundation

/// Windows of microphone audio, their levels, and how they are shown.
public struct LevelMeter: Sendable, Equatable {
    /// Samples per level event: 100 ms at 16 kHz.
    public static let window = 1600
    /// Below this, the loudest window is not taken for a voice.
    public static let voiceDBFS = -50.0

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

    /// Whether a `meter` result says a voice was heard: real sound, and a window loud enough.
    public static func heardVoice(_ result: JSONValue) -> Bool {
        let signal = result["signal"]?.stringValue
        return (signal == "ok" || signal == "clipping") && (result["loudest"]?.numberValue ?? -200) >= voiceDBFS
    }

    /// One sentence on a `meter` result.
    public static func summary(_ result: JSONValue) -> String {
        let loudest = String(format: "%.1f dBFS", result["loudest"]?.numberValue ?? SignalLevel.floorDBFS)
        switch result["signal"]?.stringValue {
        case "silent"?:
            return "The microphone gives only zeros (digital silence): its capture is switched off or muted, or nothing is plugged in. parlourctl doctor says more."
        case "constant"?:
            return "The microphone gives one value over and over: it delivers no sound. parlourctl doctor says more."
        case "none"?, nil:
            return "The microphone gave no sound at all. parlourctl doctor says more."
        default:
            guard heardVoice(result) else {
                return "The microphone heard nothing louder than \(loudest): speak up or come closer, or check it with parlourctl doctor."
            }
            let clips = result["signal"] == "clipping" ? " It clips at times: lower the capture level (alsamixer -V capture)." : ""
            return "The microphone hears you: the loudest moment was \(loudest).\(clips)"
        }
    }

    /// A `level` event as one line of the live meter, from -60 dBFS (empty) to 0 (full).
    public static func bar(_ event: JSONValue, width: Int = 30, plain: Bool = false) -> String {
        let rms = event["rms"]?.numberValue ?? SignalLevel.floorDBFS
        let peak = event["peak"]?.numberValue ?? SignalLevel.floorDBFS
        let filled = min(width, max(0, Int(((rms + 60) / 60 * Double(width)).rounded())))
        let (on, off) = plain ? ("#", ".") : ("█", "·")
        return "[" + String(repeating: on, count: filled) + String(repeating: off, count: width - filled) + "] "
            + String(format: "%6.1f dBFS (peak %.1f)", rms, peak)
    }
}
