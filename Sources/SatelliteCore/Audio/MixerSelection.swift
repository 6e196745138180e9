// Which mixer card and control `parlourctl volume` turns. The card comes from
// audio.output unless audio.mixerCard names it: `plughw:1,0` and
// `hw:CARD=Device,DEV=0` are on the card `hw:1` and `hw:Device`; `default` and
// any name the ALSA configuration defines (a plug, a dmix of its own) give the
// card `default`, whose mixer is the default card's. The control is audio.mixer;
// "Master", the default, falls back to the names small cards use instead.

/// The mixer card and the control names to try, from the config.
public enum MixerSelection {
    /// Tried in order when audio.mixer is "Master" and the card has no Master (the Raspberry Pi's
    /// own output has PCM or Headphone, USB speakers often Speaker or PCM).
    public static let fallbacks = ["PCM", "Speaker", "Headphone"]

    /// PCM kinds whose arguments name a card (`NAME:CARD,DEV` or `NAME:CARD=...`).
    static let cardPCMs: Set<String> = ["hw", "plughw", "sysdefault", "front", "rear", "center_lfe", "side", "surround21",
                                        "surround40", "surround41", "surround50", "surround51", "surround71", "iec958",
                                        "spdif", "hdmi", "dmix", "dsnoop", "usbstream"]

    /// The mixer card: `mixerCard` when set, else the card `output` plays on.
    public static func card(output: String, mixerCard: String = "") -> String {
        let explicit = mixerCard.trimmingSpaces()
        if !explicit.isEmpty { return explicit }
        let name = output.trimmingSpaces()
        guard let colon = name.firstIndex(of: ":") else { return "default" }
        guard cardPCMs.contains(String(name[..<colon])) else { return "default" }
        let arguments = name[name.index(after: colon)...].split(separator: ",").map { $0.trimmingSpaces() }
        let named = arguments.first { $0.hasPrefix("CARD=") }.map { String($0.dropFirst("CARD=".count)) }
        let positional = arguments.first.flatMap { $0.contains("=") ? nil : $0 }
        guard let card = (named ?? positional).map(unquoted), !card.isEmpty else { return "default" }
        return "hw:\(card)"
    }

    /// The control names to try, in order, for audio.mixer `control`.
    public static func candidates(control: String) -> [String] {
        control == "Master" ? [control] + fallbacks : [control]
    }

    private static func unquoted(_ text: String) -> String {
        text.count >= 2 && text.hasPrefix("\"") && text.hasSuffix("\"") ? String(text.dropFirst().dropLast()) : text
    }
}
