// `parlourctl volume`: the speaker's output level through the card's mixer,
// as a percentage of the control's range (VolumeScale). Which card and control
// is MixerSelection's rule. Easy to get wrong: a card without the control must
// say which card was asked and what controls it does have, so the fix
// (audio.mixer, audio.mixerCard) is obvious without amixer. The mixer calls are
// quick ioctls, but a `default` card may be a plugin that talks to a sound
// server, so they run on a thread of their own, never on the main loop (MainLoop).
import SatelliteCore

/// Reads and sets the output volume.
public struct SpeakerVolume: Sendable {
    /// The mixer card, such as `default` or `hw:1`.
    public let card: String
    /// audio.mixer as configured.
    public let control: String

    public init(output: String, mixer: String, mixerCard: String) {
        card = MixerSelection.card(output: output, mixerCard: mixerCard)
        control = mixer
    }

    /// `{"percent", "card", "control"}` after setting it to `percent`, or as it is when nil.
    public func volume(setTo percent: Int? = nil) async -> ControlResult {
        await withCheckedContinuation { (done: CheckedContinuation<ControlResult, Never>) in
            // No thread to be had is an answer too, never a continuation left waiting.
            if !SpareThreads.shared.run(name: "alsa-mixer", { done.resume(returning: self.turn(to: percent)) }) {
                done.resume(returning: .failure(.internalError, "No thread could be started for the mixer: the daemon is out of threads."))
            }
        }
    }

    private func turn(to percent: Int?) -> ControlResult {
        let mixer: ALSAMixer
        do {
            mixer = try ALSAMixer.open(card: card)
        } catch {
            return .failure(.speakerUnavailable, "The speaker's card \(card) has no mixer that can be opened (\(error)). "
                + "Set audio.mixerCard to the card, such as hw:0 (aplay -l lists the cards).")
        }
        let controls = mixer.controls
        let candidates = MixerSelection.candidates(control: control)
        guard let found = candidates.lazy.compactMap({ name in controls.first { $0.name == name && $0.playbackVolume } }).first else {
            let volumes = controls.filter(\.playbackVolume).map(\.name)
            let asked = candidates.count > 1 ? "\(control) (nor \(candidates.dropFirst().joined(separator: ", ")))" : control
            let has = volumes.isEmpty ? "it has no playback volume control at all" : "it has \(volumes.joined(separator: ", "))"
            let fix = volumes.isEmpty ? "Set audio.mixerCard to the card whose volume to turn." : "Set audio.mixer to one of them."
            return .failure(.speakerUnavailable, "The card \(card) has no playback volume control named \(asked); \(has). \(fix)")
        }
        do throws(ALSAError) {
            let range = try mixer.range(found)
            guard let scale = VolumeScale(min: range.min, max: range.max) else {
                return .failure(.speakerUnavailable, "The control \(found.name) on \(card) has no range to turn (\(range.min) to \(range.max)).")
            }
            if let percent { try mixer.setVolume(found, raw: scale.raw(percent: percent), audible: percent > 0) }
            // What the card holds now, which a card of few steps may round.
            let now = scale.percent(raw: try mixer.volume(found))
            return .completed(["percent": .number(Double(now)), "card": .string(card), "control": .string(found.name)])
        } catch {
            return .failure(.speakerUnavailable, "The volume on \(card) could not be \(percent == nil ? "read" : "set"): \(error).")
        }
    }
}
