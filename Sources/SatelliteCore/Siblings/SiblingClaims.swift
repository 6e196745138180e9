// The claims heard from siblings, admitted once each. A replayed claim could
// silence the satellite that should answer, so every claim is taken at most
// once: per sender and session, the highest sequence seen and which of the 64
// below it were seen too (out of order arrivals still count, repeats do not).
// A claim must also be fresh on the receiver's own clock: its wake, placed at
// arrival minus the age the sender states, lies no more than `freshnessMs`
// before arrival, and Arbitration then counts it only when that wake falls
// within its own wake's window. Memory is bounded: the least recently heard
// (sender, session) is forgotten past `maxSessions`.

/// A sibling's claim as this satellite heard it: the wake placed on this satellite's own clock.
public struct HeardClaim: Sendable, Equatable {
    public var claim: SiblingClaim
    /// The wake's time, in milliseconds of this satellite's monotonic clock.
    public var wakeMs: UInt64

    public init(claim: SiblingClaim, wakeMs: UInt64) {
        self.claim = claim
        self.wakeMs = wakeMs
    }
}

public struct SiblingClaims: Sendable {
    public static let maxSessions = 64
    /// How soon after a claim another copy of it is a copy, not a replay.
    public static let duplicateMs: UInt64 = 1_000
    static let windowBits: UInt64 = 64

    struct Seen: Sendable {
        var highest: UInt64
        /// Bit i: sequence `highest - 1 - i` was seen.
        var below: UInt64
        var heardAt: UInt64
    }

    struct Sender: Hashable, Sendable {
        let name: String
        let session: UInt64
    }

    /// The house's keys; a new token gives new ones, and what was seen and refused is kept.
    public var keys: HouseKeys
    /// How long before its arrival a claim's wake may lie.
    public let freshnessMs: UInt64
    private(set) var seen: [Sender: Seen] = [:]
    /// Refusals by reason, for status and doctor.
    public private(set) var refused: [ClaimRefusal: Int] = [:]

    public init(keys: HouseKeys, freshnessMs: Int) {
        self.keys = keys
        self.freshnessMs = UInt64(max(freshnessMs, 0))
    }

    /// The claim in `datagram`, arrived at `arrivedMs` of this satellite's monotonic clock, when it is one to count.
    public mutating func receive(_ datagram: [UInt8], arrivedMs: UInt64) -> Result<HeardClaim, ClaimRefusal> {
        let result = admit(datagram, arrivedMs: arrivedMs)
        if case .failure(let reason) = result, reason != .duplicate { refused[reason, default: 0] += 1 }
        return result
    }

    private mutating func admit(_ datagram: [UInt8], arrivedMs: UInt64) -> Result<HeardClaim, ClaimRefusal> {
        let claim: SiblingClaim
        switch SiblingClaim.decode(datagram, keys: keys) {
        case .success(let decoded): claim = decoded
        case .failure(let reason): return .failure(reason)
        }
        let age = UInt64(claim.ageMs)
        guard age <= freshnessMs else { return .failure(.stale) }
        let sender = Sender(name: claim.name, session: claim.session)
        guard remember(sender, claim.sequence, at: arrivedMs) else {
            // A sibling sends each claim to every address it has for this satellite (IPv4, IPv6, each
            // interface): the copies come within moments of the first and are no replay.
            if let entry = seen[sender], entry.highest == claim.sequence, arrivedMs >= entry.heardAt, arrivedMs - entry.heardAt <= Self.duplicateMs {
                return .failure(.duplicate)
            }
            return .failure(.replayed)
        }
        return .success(HeardClaim(claim: claim, wakeMs: arrivedMs >= age ? arrivedMs - age : 0))
    }

    /// Records `sequence` of `sender`; false when it was seen, or lies too far below the highest to tell.
    private mutating func remember(_ sender: Sender, _ sequence: UInt64, at now: UInt64) -> Bool {
        guard var entry = seen[sender] else {
            if seen.count >= Self.maxSessions, let oldest = seen.min(by: { $0.value.heardAt < $1.value.heardAt })?.key {
                seen[oldest] = nil
            }
            seen[sender] = Seen(highest: sequence, below: 0, heardAt: now)
            return true
        }
        if sequence > entry.highest {
            let shift = sequence - entry.highest
            // The old highest becomes bit shift-1 and the rest move up with it; Swift's `<<` past 63 gives 0.
            entry.below = (entry.below << shift) | (1 << (shift - 1))
            entry.highest = sequence
        } else {
            let distance = entry.highest - sequence
            guard distance > 0, distance <= Self.windowBits else { return false }
            let bit: UInt64 = 1 << (distance - 1)
            guard entry.below & bit == 0 else { return false }
            entry.below |= bit
        }
        entry.heardAt = max(entry.heardAt, now)
        seen[sender] = entry
        return true
    }
}
