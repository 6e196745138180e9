// Whether an answer is followed by listening again without the wake word
// (`conversation.*`): the house asked something, so a person answers it. Pure,
// so the decision is table-tested; TurnMachine asks it once the answer has
// finished playing.

/// When the satellite listens again after an answer, and for how long.
public struct FollowUp: Sendable, Equatable {
    public enum Mode: String, Sendable, CaseIterable {
        /// After an answer that ends with a question.
        case question
        case never
        /// After every answer.
        case always
    }

    public var mode: Mode
    /// How long a follow-up waits for speech to start.
    public var waitMs: Int
    /// Follow-ups in a row.
    public var maxInARow: Int

    public init(mode: Mode = .question, waitMs: Int = 5_000, maxInARow: Int = 3) {
        self.mode = mode
        self.waitMs = waitMs
        self.maxInARow = maxInARow
    }

    /// What is kept from before speech was known to start, and goes up with it: the onset takes
    /// 80 ms of voiced frames to be sure of, and a soft first sound comes before those.
    public static let preRollSamples = 8_000

    /// The endpointer of a follow-up: as a push turn's, but speech must start within `waitMs`.
    public func endpointing(_ turn: Endpointer.Settings) -> Endpointer.Settings {
        var settings = turn
        settings.leadingSilenceMs = waitMs
        return settings
    }

    /// Whether the answer `reply`, after `inARow` follow-ups, is followed by another.
    public func follows(_ reply: String, inARow: Int) -> Bool {
        guard inARow < maxInARow else { return false }
        switch mode {
        case .never: return false
        case .always: return true
        case .question: return Self.asks(reply)
        }
    }

    /// The text ends with a question mark, closing quotes and spaces aside ("Which one?", `"For how long?"`).
    public static func asks(_ text: String) -> Bool {
        let closers: Set<Character> = ["\"", "'", "\u{201D}", "\u{2019}", "\u{00BB}", "\u{203A}"]
        let kept = text.reversed().drop { $0.isWhitespace || closers.contains($0) }
        // The fullwidth question mark ends a question in Chinese and Japanese text.
        return kept.first == "?" || kept.first == "\u{FF1F}"
    }
}
