// The built-in sounds are made here from a recipe of notes, in memory, when the
// daemon starts: no sound files to install or download, and nothing to go
// missing. Each note fades in and out over a few milliseconds, because a sine
// that starts or stops at full level clicks.
import Glibc

/// One note of a built-in sound: a sine at `hertz` for `milliseconds` (0 Hz is a pause).
public struct Tone: Sendable, Equatable {
    public var hertz: Double
    public var milliseconds: Int

    public init(hertz: Double, milliseconds: Int) {
        self.hertz = hertz
        self.milliseconds = milliseconds
    }

    static let fadeMs = 8

    /// The notes one after the other, as 16-bit mono PCM at `sampleRate`, peaking at `level` of full scale.
    public static func render(_ notes: [Tone], level: Double = 0.3, sampleRate: Int = 16_000) -> PCMAudio {
        var samples: [Int16] = []
        for note in notes {
            let count = note.milliseconds * sampleRate / 1000
            let fade = max(1, min(fadeMs * sampleRate / 1000, count / 2))
            samples.reserveCapacity(samples.count + count)
            for i in 0..<count {
                guard note.hertz > 0 else {
                    samples.append(0)
                    continue
                }
                // A raised-cosine ramp at each end of the note.
                let edge = min(i, count - 1 - i)
                let gain = edge >= fade ? 1 : 0.5 - 0.5 * cos(Double.pi * Double(edge) / Double(fade))
                let value = sin(2 * Double.pi * note.hertz * Double(i) / Double(sampleRate)) * level * gain
                samples.append(Int16((value * 32767).rounded()))
            }
        }
        return PCMAudio(sampleRate: sampleRate, channels: 1, samples: samples)
    }
}
