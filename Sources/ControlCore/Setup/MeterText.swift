// How parlourctl shows what the microphone heard: the live bar of each `level`
// event and the sentence on a `meter` result. The daemon measures
// (LevelMeter, in SatelliteCore); this side only reads the numbers back, so
// parlourctl needs none of the audio code.

/// The words and the bar for the `meter` command's events and result.
public enum MeterText {
    /// The lowest level reported, in dBFS: what digital silence measures (`SignalLevel` clamps to it).
    public static let floorDBFS = -96.0
    /// Below this, the loudest window is not taken for a voice.
    public static let voiceDBFS = -50.0

    /// Whether a `meter` result says a voice was heard: real sound, and a window loud enough.
    public static func heardVoice(_ result: JSONValue) -> Bool {
        let signal = result["signal"]?.stringValue
        return (signal == "ok" || signal == "clipping") && (result["loudest"]?.numberValue ?? -200) >= voiceDBFS
    }

    /// One sentence on a `meter` result.
    public static func summary(_ result: JSONValue) -> String {
        let loudest = String(printf: "%.1f dBFS", result["loudest"]?.numberValue ?? floorDBFS)
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
        let rms = event["rms"]?.numberValue ?? floorDBFS
        let peak = event["peak"]?.numberValue ?? floorDBFS
        let filled = min(width, max(0, Int(((rms + 60) / 60 * Double(width)).rounded())))
        let (on, off) = plain ? ("#", ".") : ("█", "·")
        return "[" + String(repeating: on, count: filled) + String(repeating: off, count: width - filled) + "] "
            + String(printf: "%6.1f dBFS (peak %.1f)", rms, peak)
    }
}
