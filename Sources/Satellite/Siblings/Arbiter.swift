// Whether this satellite answers a wake, decided with its siblings: its claim
// goes out on the link, the window (ArbitrationWindow) takes the siblings'
// claims as the link hands them over, those that came before the wake too,
// and closes when every known sibling has claimed or at its deadline, which a
// timer set for it meets (CLOCK_MONOTONIC, no polling). Claims are kept and
// windows opened under one lock, so a claim arriving as a window opens joins
// it either way. With no sibling known it is decided at once; with no token,
// or no port, this satellite answers as if it had no siblings.
import SatelliteCore
import Synchronization

final class Arbiter: WakeArbiter {
    struct Settings: Sendable {
        var enabled: Bool
        var windowMs: Int
        var levelOffsetDb: Double
        /// The config's name, claimed under until Bonjour has advertised this satellite.
        var name: String

        init(_ config: SatelliteConfig.Arbitration, name: String) {
            enabled = config.enabled
            windowMs = config.windowMs
            levelOffsetDb = config.levelOffsetDb
            self.name = name
        }
    }

    /// What doctor reads: the decisions taken with siblings known, and in how many any sibling's claim counted.
    struct Facts: Sendable, Equatable {
        var decidedWithSiblings = 0
        var heardFromSiblings = 0
        /// The siblings known at the last decision whose claim did not come in time.
        var silent: [String] = []
    }

    /// Claims kept from before a wake: more than a house has satellites.
    static let recentLimit = 32
    /// How long after its wake a sibling may claim it: the local wake word is timed at the frame that
    /// decided it, and decided when its microphone period (120 ms) was read.
    static let claimLagMs = 150

    private struct Pending {
        var window: ArbitrationWindow
        let answer: CheckedContinuation<ArbitrationDecision, Never>
    }

    private struct State {
        var sender: ClaimSender?
        var recent: [HeardClaim] = []
        var pending: [Int: Pending] = [:]
        var next = 0
        var facts = Facts()
    }

    private let settings: Settings
    private let roster: any SiblingRoster
    private let link: SiblingLink
    private let bus: EventBus
    private let room: @Sendable () -> String
    /// Random once a start: with the sequence, what makes each claim one a sibling takes once.
    private let session = UInt64.random(in: .min ... .max)
    private let state = Mutex(State())

    /// `room`: this satellite's room now.
    init(settings: Settings, roster: any SiblingRoster, link: SiblingLink, bus: EventBus, room: @escaping @Sendable () -> String) {
        self.settings = settings
        self.roster = roster
        self.link = link
        self.bus = bus
        self.room = room
        link.deliver { [weak self] claim in self?.heard(claim) }
    }

    var facts: Facts { state.withLock { $0.facts } }

    func arbitrate(levelDb: Double, probability: Double, wakeNs: UInt64) async -> ArbitrationDecision? {
        guard settings.enabled else { return nil }
        let siblings = await roster.siblings()
        let name = await roster.advertisedName() ?? settings.name
        let room = room()
        let nowNs = MonotonicClock.nanoseconds()
        let ageMs = Int(nowNs > wakeNs ? (nowNs - wakeNs) / 1_000_000 : 0)
        guard let keys = link.houseKeys, link.port != nil else {
            // No claim goes out or comes in: answered as by a lone satellite.
            let own = SiblingClaim(house: [], session: session, sequence: 0, levelDb: levelDb + settings.levelOffsetDb,
                                   probability: probability, ageMs: ageMs, name: name, room: room)
            return Arbitration.decide(own: HeardClaim(claim: own, wakeMs: wakeNs / 1_000_000), claims: [], windowMs: settings.windowMs)
        }
        let wakeMs = wakeNs / 1_000_000
        let id = state.withLock { s in
            s.next += 1
            return s.next
        }
        var own: SiblingClaim?
        var timer: Task<Void, Never>?
        let decision = await withCheckedContinuation { (answer: CheckedContinuation<ArbitrationDecision, Never>) in
            let opened = state.withLock { s in
                if s.sender?.keys != keys || s.sender?.name != name || s.sender?.room != room {
                    s.sender = ClaimSender(keys: keys, session: session, name: name, room: room,
                                           levelOffsetDb: settings.levelOffsetDb, sequence: s.sender?.sequence ?? 0)
                }
                let claim = s.sender!.claim(levelDb: levelDb, probability: probability, ageMs: ageMs)
                let window = ArbitrationWindow(own: HeardClaim(claim: claim, wakeMs: wakeMs), siblings: Set(siblings.map(\.name)),
                                               windowMs: settings.windowMs, lagMs: Self.claimLagMs, heard: s.recent)
                if window.decision == nil { s.pending[id] = Pending(window: window, answer: answer) }
                return window
            }
            own = opened.own.claim
            link.send(opened.own.claim.encoded(key: keys.claimKey), to: siblings)
            if let decided = opened.decision {
                answer.resume(returning: decided)
                return
            }
            // Cancelled once the window is decided early; at the deadline it closes the window.
            guard case .collecting(let deadlineMs) = opened.state else { return }
            timer = Task { [self] in
                while !Task.isCancelled {
                    let now = MonotonicClock.nanoseconds() / 1_000_000
                    guard now < deadlineMs else { break }
                    try? await Task.sleep(for: .milliseconds(deadlineMs - now), clock: .suspending)
                }
                tick(id)
            }
        }
        timer?.cancel()
        record(decision, own: own ?? decision.winner, siblings: siblings)
        return decision
    }

    /// A sibling's claim, on the link's thread: kept, and given to every window open.
    private func heard(_ claim: HeardClaim) {
        let decided = state.withLock { s in
            s.recent.append(claim)
            if s.recent.count > Self.recentLimit { s.recent.removeFirst() }
            var decided: [(CheckedContinuation<ArbitrationDecision, Never>, ArbitrationDecision)] = []
            for (id, var pending) in s.pending {
                if let decision = pending.window.heard(claim) {
                    decided.append((pending.answer, decision))
                    s.pending[id] = nil
                } else {
                    s.pending[id] = pending
                }
            }
            return decided
        }
        for (answer, decision) in decided { answer.resume(returning: decision) }
    }

    /// The deadline of window `id` has come, if it is still open.
    private func tick(_ id: Int) {
        let nowMs = MonotonicClock.nanoseconds() / 1_000_000
        let decided = state.withLock { s -> (CheckedContinuation<ArbitrationDecision, Never>, ArbitrationDecision)? in
            guard var pending = s.pending[id] else { return nil }
            guard let decision = pending.window.tick(nowMs: nowMs) else {
                s.pending[id] = pending
                return nil
            }
            s.pending[id] = nil
            return (pending.answer, decision)
        }
        if let (answer, decision) = decided { answer.resume(returning: decision) }
    }

    /// For doctor, and for watch and the journal when any sibling is known or took part.
    private func record(_ decision: ArbitrationDecision, own: SiblingClaim, siblings: [Sibling]) {
        guard !siblings.isEmpty || !decision.claims.isEmpty else { return }
        let answered = Set(decision.claims.map(\.claim.name))
        state.withLock { s in
            if !siblings.isEmpty {
                s.facts.decidedWithSiblings += 1
                if !decision.claims.isEmpty { s.facts.heardFromSiblings += 1 }
            }
            s.facts.silent = siblings.map(\.name).filter { !answered.contains($0) }.sorted()
        }
        bus.publish(.arbitration(won: decision.won, winner: decision.winner, claims: [own] + decision.claims.map(\.claim)))
    }
}
