// Plays the awake, done and error sounds at the moments they mark. The callers
// (a turn, the stream) call it where the moment happens, and it returns as soon
// as the sound has started, so a cue never holds up listening or the answer;
// Playback decides what gives way when a cue and an answer meet.
import SatelliteCore

/// The cues' sounds and the speaker they play on.
public struct CuePlayer: Sendable {
    private let playback: Playback
    private let sounds: CueSounds

    public init(playback: Playback, sounds: CueSounds) {
        self.playback = playback
        self.sounds = sounds
    }

    /// Starts the cue's sound, if it has one; does not wait for its end.
    public func play(_ cue: Cue) async {
        guard let audio = sounds[cue] else { return }
        await playback.startCue(audio)
    }
}
