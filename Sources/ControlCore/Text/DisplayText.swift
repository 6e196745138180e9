// Text that came from elsewhere (a pairing link, Bonjour, a server's answer)
// made safe to show a person: on a terminal or in a log line, a control
// character can move the cursor, recolour or forge a whole line, and a bidi
// control can make one address read as another. Each becomes a visible \u{...}.

/// Escaping for what the eye is shown.
public enum DisplayText {
    /// `text` with every control character (C0, DEL, C1), line or paragraph separator and bidi
    /// control written as `\u{XX}`. Everything else, other scripts included, stays as it is.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var shown = ""
        for scalar in text.unicodeScalars {
            if needsEscape(scalar) {
                shown += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }

    /// Whether `scalar` must not reach a terminal or a log line as it is.
    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true           // C0, DEL, C1 (CR, LF, ESC among them)
        case 0x2028, 0x2029: true                     // line and paragraph separators
        case 0x061C, 0x200E, 0x200F: true             // Arabic letter mark, LRM, RLM
        case 0x202A...0x202E, 0x2066...0x2069: true   // embeddings, overrides, isolates
        default: false
        }
    }
}

extension StringProtocol {
    /// This text as `DisplayText.escaped` shows it.
    public var shown: String { DisplayText.escaped(String(self)) }
}
