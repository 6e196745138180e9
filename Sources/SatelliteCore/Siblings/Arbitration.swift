// Which of a house's satellites that heard one wake word answers: the loudest,
// ties by the detector's probability, then by name, then by session, so that
// every satellite given the same claims reaches the same answer. A claim counts
// only when its wake lies within `windowMs` of this satellite's own.
// Wakes of one word spread further than a window when rooms hear it late or a
// detector decides late; a sibling that woke more than a window before this one
// decided without it. So a claim up to two windows earlier counts too: when it
// won among the claims of its own window that this satellite knows, that
// sibling answers already and this one does not, however loud (else two would).

public struct ArbitrationDecision: Sendable, Equatable {
    /// Whether this satellite answers.
    public var won: Bool
    /// The claim that won (this satellite's own when `won`).
    public var winner: SiblingClaim
    /// The siblings' claims that took part (not this satellite's own).
    public var claims: [HeardClaim]
}

public enum Arbitration {
    /// The decision among `own` and those of `claims` within `windowMs` of it.
    public static func decide(own: HeardClaim, claims: [HeardClaim], windowMs: Int) -> ArbitrationDecision {
        let counted = claims.filter { counts($0, for: own, windowMs: windowMs) }
        var winner = own.claim
        for heard in counted where inWindow(heard, of: own, windowMs: windowMs) && beats(heard.claim, winner) { winner = heard.claim }
        if winner == own.claim {
            // The earliest sibling that decided before this one woke and won what it could hear.
            let decidedBefore = counted.filter { !inWindow($0, of: own, windowMs: windowMs) }.sorted { $0.wakeMs < $1.wakeMs }
            if let first = decidedBefore.first(where: { early in
                !claims.contains { inWindow($0, of: early, windowMs: windowMs) && beats($0.claim, early.claim) }
            }) { winner = first.claim }
        }
        return ArbitrationDecision(won: winner == own.claim, winner: winner, claims: counted)
    }

    /// Whether `heard` is another satellite's claim of the same house whose wake lies within `windowMs` of `own`'s,
    /// or up to two windows before it (a sibling that decided before this one woke).
    public static func counts(_ heard: HeardClaim, for own: HeardClaim, windowMs: Int) -> Bool {
        guard heard.claim.house == own.claim.house, heard.claim != own.claim else { return false }
        let window = UInt64(max(windowMs, 0))
        return inWindow(heard, of: own, windowMs: windowMs) || heard.wakeMs < own.wakeMs && own.wakeMs - heard.wakeMs <= 2 * window
    }

    /// Whether the two wakes lie within `windowMs` of each other: each waits for the other's claim.
    static func inWindow(_ a: HeardClaim, of b: HeardClaim, windowMs: Int) -> Bool {
        let gap = a.wakeMs >= b.wakeMs ? a.wakeMs - b.wakeMs : b.wakeMs - a.wakeMs
        return gap <= UInt64(max(windowMs, 0))
    }

    /// Whether `a` answers rather than `b`.
    public static func beats(_ a: SiblingClaim, _ b: SiblingClaim) -> Bool {
        if a.levelCentiDb != b.levelCentiDb { return a.levelCentiDb > b.levelCentiDb }
        if a.probability != b.probability { return a.probability > b.probability }
        // Compared as UTF-8 bytes, which every satellite orders alike whatever its locale.
        if a.name != b.name { return a.name.utf8.lexicographicallyPrecedes(b.name.utf8) }
        return a.session < b.session
    }
}

/// The wait after a wake for the siblings' claims: collecting until the window
/// closes or every known sibling has claimed, then decided. With no sibling
/// known, decided at once.
public struct ArbitrationWindow: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        case collecting(deadlineMs: UInt64)
        case decided(ArbitrationDecision)
    }

    public let own: HeardClaim
    public let windowMs: Int
    /// The siblings' names (Bonjour's), whose claims close the window early once all have come.
    public let siblings: Set<String>
    public private(set) var claims: [HeardClaim]
    public private(set) var state: State

    /// Opens the window at this satellite's own wake; `heard` holds claims that came before it. A wake is
    /// timed at the sound that woke it, and claimed only once a detector has decided on it, up to `lagMs`
    /// later: a claim whose wake lies within the window may come that much after the window, and is waited for.
    public init(own: HeardClaim, siblings: Set<String>, windowMs: Int, lagMs: Int = 0, heard: [HeardClaim] = []) {
        self.own = own
        self.windowMs = windowMs
        self.siblings = siblings
        claims = []
        state = .collecting(deadlineMs: own.wakeMs &+ UInt64(max(windowMs, 0)) &+ UInt64(max(lagMs, 0)))
        for claim in heard { _ = take(claim) }
        decideIfComplete()
    }

    public var decision: ArbitrationDecision? {
        if case .decided(let decision) = state { decision } else { nil }
    }

    /// A sibling's claim; the decision when it was the last one awaited.
    public mutating func heard(_ claim: HeardClaim) -> ArbitrationDecision? {
        guard case .collecting = state else { return nil }
        if take(claim) { decideIfComplete() }
        return decision
    }

    /// The clock's reading; the decision once the deadline has passed.
    public mutating func tick(nowMs: UInt64) -> ArbitrationDecision? {
        guard case .collecting(let deadline) = state else { return nil }
        if nowMs >= deadline { close() }
        return decision
    }

    /// Keeps `claim` when it belongs to this wake; the others wait for no one.
    private mutating func take(_ claim: HeardClaim) -> Bool {
        guard Arbitration.counts(claim, for: own, windowMs: windowMs) else { return false }
        claims.append(claim)
        return true
    }

    private mutating func decideIfComplete() {
        guard case .collecting = state else { return }
        let answered = Set(claims.map(\.claim.name))
        if siblings.isSubset(of: answered) { close() }
    }

    private mutating func close() {
        state = .decided(Arbitration.decide(own: own, claims: claims, windowMs: windowMs))
    }
}
