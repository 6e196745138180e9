// Status `arbitration`: whether this satellite decides with the house's other
// satellites which of them answers a wake, and which of them it sees now.

/// What `parlourctl status` shows of the siblings.
public struct ArbitrationHealth: Sendable, Equatable {
    /// A sibling as status lists it.
    public struct Sibling: Sendable, Equatable {
        public var name: String
        public var room: String

        public init(name: String, room: String) {
            self.name = name
            self.room = room
        }
    }

    /// `arbitration.enabled`.
    public var enabled: Bool
    /// Those Bonjour shows now, in the order first seen.
    public var siblings: [Sibling]

    public init(enabled: Bool, siblings: [Sibling] = []) {
        self.enabled = enabled
        self.siblings = siblings
    }

    public var json: JSONValue {
        ["enabled": .bool(enabled),
         "siblings": .array(siblings.map { ["name": .string($0.name), "room": .string($0.room)] })]
    }
}
