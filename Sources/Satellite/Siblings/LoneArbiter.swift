// Answers every wake as a satellite with no sibling does: at once, won, with
// no claims; nil when arbitration is off. It stands where the siblings'
// Arbiter goes, so the wake paths run as they will with it.
import SatelliteCore

/// A WakeArbiter that knows no sibling.
public struct LoneArbiter: WakeArbiter {
    public let enabled: Bool
    public let name: String
    public let room: String

    public init(enabled: Bool, name: String, room: String) {
        self.enabled = enabled
        self.name = name
        self.room = room
    }

    public func arbitrate(levelDb: Double, probability: Double, wakeNs: UInt64) async -> ArbitrationDecision? {
        guard enabled else { return nil }
        let own = SiblingClaim(house: [], session: 0, sequence: 0, levelDb: levelDb, probability: probability, ageMs: 0,
                               name: name, room: room)
        return Arbitration.decide(own: HeardClaim(claim: own, wakeMs: wakeNs / 1_000_000), claims: [], windowMs: 0)
    }
}
