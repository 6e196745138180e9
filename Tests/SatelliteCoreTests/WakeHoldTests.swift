import Testing
@testable import SatelliteCore

/// The room from a server's wake to the siblings' decision, step by step: each row is what
/// happened, what went up, and where the hold is after it.
@Suite struct WakeHoldTests {
    enum Step: Equatable {
        case woke
        case heard([Int16])
        case decided(won: Bool)
    }

    struct Row {
        let steps: [Step]
        /// What went up, in order, step by step (nil: nothing at that step).
        let sent: [[Int16]?]
        let after: WakeHold.State
    }

    static let table: [(String, Row)] = [
        ("no wake: the room goes up as heard",
         Row(steps: [.heard([1, 2]), .heard([3])], sent: [[1, 2], [3]], after: .passing)),
        ("won: what was kept goes up first, then the room as heard",
         Row(steps: [.heard([1]), .woke, .heard([2, 3]), .heard([4]), .decided(won: true), .heard([5])],
             sent: [[1], nil, nil, nil, [2, 3, 4], [5]], after: .passing)),
        ("won at once, nothing kept: nothing extra goes up",
         Row(steps: [.woke, .decided(won: true), .heard([1])], sent: [nil, nil, [1]], after: .passing)),
        ("lost: what was kept is dropped, and nothing more goes up",
         Row(steps: [.woke, .heard([1, 2]), .decided(won: false), .heard([3]), .woke, .heard([4]), .decided(won: true), .heard([5])],
             sent: [nil, nil, nil, nil, nil, nil, nil, nil], after: .dropping)),
        ("a second wake before the decision keeps what the first kept",
         Row(steps: [.woke, .heard([1]), .woke, .heard([2]), .decided(won: true)], sent: [nil, nil, nil, nil, [1, 2]], after: .passing)),
        ("undecided past the bound: the room goes up rather than be lost, and a late win adds nothing",
         Row(steps: [.woke, .heard([1, 2, 3]), .heard([4, 5]), .heard([6]), .decided(won: true), .heard([7])],
             sent: [nil, nil, [1, 2, 3, 4, 5], [6], nil, [7]], after: .passing)),
        ("undecided past the bound, then lost: nothing more goes up",
         Row(steps: [.woke, .heard([1, 2, 3, 4, 5]), .decided(won: false), .heard([6])],
             sent: [nil, [1, 2, 3, 4, 5], nil, nil], after: .dropping)),
        ("a decision with no wake changes nothing when won",
         Row(steps: [.decided(won: true), .heard([1])], sent: [nil, [1]], after: .passing)),
    ]

    @Test(arguments: table.indices)
    func row(_ index: Int) {
        let (name, row) = Self.table[index]
        var hold = WakeHold(boundSamples: 4)
        var sent: [[Int16]?] = []
        for step in row.steps {
            switch step {
            case .woke:
                hold.woke()
                sent.append(nil)
            case .heard(let samples): sent.append(hold.heard(samples))
            case .decided(let won): sent.append(hold.decided(won: won))
            }
        }
        #expect(sent == row.sent, "\(name)")
        #expect(hold.state == row.after, "\(name)")
    }

    @Test func theBoundIsTheWindowAndHalfASecond() {
        #expect(WakeHold(windowMs: 200).boundSamples == 700 * 16)
        #expect(WakeHold(windowMs: 1000).boundSamples == 1500 * 16)
        #expect(WakeHold(windowMs: -5).boundSamples == 500 * 16)
    }
}
