// What a room name may be, the same wherever one comes from: the config's
// `room`, `parlourctl room set`, the control command, and room.json.

/// A room name: trimmed, at most 40 characters, no control characters; "" for none.
public enum RoomName {
    public static let maxLength = 40

    /// The name cleaned (trimmed), or nil when it is not one.
    public static func clean(_ text: String) -> String? {
        let trimmed = text.trimmingSpaces()
        guard trimmed.count <= maxLength, !trimmed.unicodeScalars.contains(where: \.isControlCharacter) else { return nil }
        return trimmed
    }
}
