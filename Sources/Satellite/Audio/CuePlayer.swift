// Plays the awake, done and error sounds at the moments they mark. The callers
// (a turn, the stream) call it where the moment happens, and it returns as soon
// as the sound has started, so a cue never holds up listening or the answer
// (the error sound alone is awaited: the result comes once it has been heard,
// as a listen's comes once its answer has played); Playback decides what gives
// way when a cue and an answer meet.
import SatelliteCore

/// The cues' sounds and the speaker they play on.
public struct CuePlayer: Sendable {
    private let playback: Playback
    private let sounds: CueSounds

    public init(playback: Playback, sounds: CueSounds) {
        self.playback = playback
        self.sounds = sounds
    }

    /// Starts the cue's sound, if it has one; waits for its end only with `untilEnd`.
    public func play(_ cue: Cue, untilEnd: Bool = false) async {
        guard let audio = sounds[cue] else { return }
        await playback.startCue(audio, untilEnd: untilEnd)
    }
}
