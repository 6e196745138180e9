// The three moments the satellite marks with a sound (`sounds.*` in the config),
// and the built-in sound of each. They are told apart by ear and by test: the
// awake sound rises, the done sound is one short note, the error sound is low
// and doubled.

/// A moment the satellite marks with a short sound.
public enum Cue: String, Sendable, CaseIterable, Equatable {
    /// Listening starts.
    case awake
    /// The utterance ended (end of speech), before the answer.
    case done
    /// A listen or ask ended in an error.
    case error

    /// Its key in satellite.json.
    public var configKey: String { "sounds.\(rawValue)" }

    /// The notes of the built-in sound.
    public var notes: [Tone] {
        switch self {
        case .awake: [Tone(hertz: 784, milliseconds: 70), Tone(hertz: 1175, milliseconds: 90)]
        case .done: [Tone(hertz: 587, milliseconds: 90)]
        case .error: [Tone(hertz: 330, milliseconds: 110), Tone(hertz: 0, milliseconds: 50), Tone(hertz: 330, milliseconds: 110)]
        }
    }

    /// The built-in sound: 16 kHz mono, made from `notes`.
    public var builtin: PCMAudio { Tone.render(notes) }
}
