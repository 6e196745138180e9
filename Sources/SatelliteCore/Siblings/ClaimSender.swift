// What this satellite claims on each wake: its level with the person's
// correction added, and the next sequence of its session, so that no two of
// its claims look alike to a sibling's replay tracker. The session is drawn by
// the caller (at random, once a start), which keeps this pure.

public struct ClaimSender: Sendable {
    public let keys: HouseKeys
    public let session: UInt64
    public let name: String
    public let room: String
    /// `arbitration.levelOffsetDb`.
    public let levelOffsetDb: Double
    public private(set) var sequence: UInt64 = 0

    /// `sequence`: the last one claimed in this session, when the keys, name or room change within it.
    public init(keys: HouseKeys, session: UInt64, name: String, room: String, levelOffsetDb: Double, sequence: UInt64 = 0) {
        self.keys = keys
        self.sequence = sequence
        self.session = session
        self.name = name
        self.room = room
        self.levelOffsetDb = levelOffsetDb
    }

    /// The claim of a wake heard at `levelDb` (after processing) with `probability`, sent `ageMs` after it.
    public mutating func claim(levelDb: Double, probability: Double, ageMs: Int) -> SiblingClaim {
        sequence &+= 1
        return SiblingClaim(house: keys.house, session: session, sequence: sequence, levelDb: levelDb + levelOffsetDb,
                            probability: probability, ageMs: ageMs, name: name, room: room)
    }
}
