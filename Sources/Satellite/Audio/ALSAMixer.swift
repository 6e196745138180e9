// A card's simple mixer (snd_mixer_*), for the speaker's volume. Opened for one
// read or change and closed again: the mixer holds no lock on the card, and a
// card that comes and goes (USB) is simply opened afresh. These calls are ioctls
// on the control device and return at once, so they run on the caller's thread.
import CALSA
import Glibc

/// One open simple mixer. Only the thread that opened it touches it; closed on deinit.
final class ALSAMixer {
    let card: String
    private let handle: OpaquePointer

    /// A simple control: its name, and whether it has a playback volume.
    struct Control {
        let name: String
        let element: OpaquePointer
        let playbackVolume: Bool
    }

    private init(card: String, handle: OpaquePointer) {
        self.card = card
        self.handle = handle
    }

    deinit { snd_mixer_close(handle) }

    /// Opens the simple mixer of `card` (a ctl name such as `default` or `hw:1`) and loads its controls.
    static func open(card: String) throws(ALSAError) -> ALSAMixer {
        // The library's own stderr lines stay off here too (see shim.h); the error says it all.
        parlour_alsa_silence_library_errors()
        var opened: OpaquePointer?
        try ALSAError.check(snd_mixer_open(&opened, 0), "snd_mixer_open", card)
        guard let handle = opened else { throw ALSAError(function: "snd_mixer_open", code: -ENOMEM, device: card) }
        do {
            try ALSAError.check(snd_mixer_attach(handle, card), "snd_mixer_attach", card)
            try ALSAError.check(snd_mixer_selem_register(handle, nil, nil), "snd_mixer_selem_register", card)
            try ALSAError.check(snd_mixer_load(handle), "snd_mixer_load", card)
        } catch {
            snd_mixer_close(handle)
            throw error
        }
        return ALSAMixer(card: card, handle: handle)
    }

    /// Every simple control of the card, in the card's order.
    var controls: [Control] {
        var all: [Control] = []
        var element = snd_mixer_first_elem(handle)
        while let current = element {
            if snd_mixer_selem_is_active(current) != 0, let name = snd_mixer_selem_get_name(current) {
                all.append(Control(name: String(cString: name), element: current,
                                   playbackVolume: snd_mixer_selem_has_playback_volume(current) != 0))
            }
            element = snd_mixer_elem_next(current)
        }
        return all
    }

    /// The control's raw range.
    func range(_ control: Control) throws(ALSAError) -> (min: Int, max: Int) {
        var low = 0, high = 0
        try ALSAError.check(snd_mixer_selem_get_playback_volume_range(control.element, &low, &high),
                            "snd_mixer_selem_get_playback_volume_range", card)
        return (low, high)
    }

    /// The raw playback volume, the mean of the control's channels.
    func volume(_ control: Control) throws(ALSAError) -> Int {
        var total = 0, channels = 0
        for channel in Self.channels where snd_mixer_selem_has_playback_channel(control.element, channel) != 0 {
            var value = 0
            try ALSAError.check(snd_mixer_selem_get_playback_volume(control.element, channel, &value),
                                "snd_mixer_selem_get_playback_volume", card)
            total += value
            channels += 1
        }
        guard channels > 0 else { throw ALSAError(function: "snd_mixer_selem_has_playback_channel", code: -ENOENT, device: card) }
        return Int((Double(total) / Double(channels)).rounded())
    }

    /// Sets every channel to `raw`; a playback switch that was off is turned on for a volume above the lowest.
    func setVolume(_ control: Control, raw: Int, audible: Bool) throws(ALSAError) {
        try ALSAError.check(snd_mixer_selem_set_playback_volume_all(control.element, raw),
                            "snd_mixer_selem_set_playback_volume_all", card)
        if audible, snd_mixer_selem_has_playback_switch(control.element) != 0 {
            try ALSAError.check(snd_mixer_selem_set_playback_switch_all(control.element, 1),
                                "snd_mixer_selem_set_playback_switch_all", card)
        }
    }

    private static let channels: [snd_mixer_selem_channel_id_t] =
        (SND_MIXER_SCHN_FRONT_LEFT.rawValue...SND_MIXER_SCHN_LAST.rawValue).map { snd_mixer_selem_channel_id_t(rawValue: $0) }
}
