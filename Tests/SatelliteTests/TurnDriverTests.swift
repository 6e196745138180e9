// The turn's driver: an event that comes while an action awaits (a cue, the
// speaker stopping, the microphone opening) is applied only once the list that
// action belongs to has been carried out to its end, and no action of that list
// runs after it. The effects here stand in for the transports' ALSA and socket
// effects only to control timing: each records what it was asked to do and holds
// the action the test names until the test lets it go, as a slow device would.
// The transports' own effects are driven by the real daemon's suites (StreamTests,
// RoundTripTests, ListenInTests, MuteTests and others).
@testable import Satellite
@testable import SatelliteCore
import Testing

@Suite("The turn driver carries each event's actions out to their end before the next event", .timeLimit(.minutes(1)))
struct TurnDriverTests {
    /// Records the actions and holds one until released; sends what the transports send after an action.
    actor Effects: TurnEffects {
        let driver: TurnDriver<Effects>
        private(set) var done: [TurnAction] = []
        private var holdAt: TurnAction?
        private var held: CheckedContinuation<Void, Never>?
        private var reached: CheckedContinuation<Void, Never>?

        init(_ machine: TurnMachine) {
            driver = TurnDriver(machine)
        }

        /// The event an action leads to, as the transports send it (the microphone opened, the notice made).
        static func followUp(_ action: TurnAction) -> TurnEvent? {
            switch action {
            case .openMicrophone(let number): .microphoneOpened(number: number)
            case .prepareNotice: .notice(ready: true)
            default: nil
            }
        }

        func perform(_ action: TurnAction, audio: PCMAudio?) async {
            done.append(action)
            if action == holdAt {
                holdAt = nil
                reached?.resume()
                reached = nil
                await withCheckedContinuation { held = $0 }
            }
            if let next = Self.followUp(action) { driver.send(next) }
        }

        func drive() async { await driver.run(self) }
        func hold(at action: TurnAction) { holdAt = action }

        /// Returns once the held action has been reached.
        func untilHeld() async {
            guard held == nil else { return }
            await withCheckedContinuation { reached = $0 }
        }

        func release() {
            held?.resume()
            held = nil
        }

        func send(_ event: TurnEvent) { driver.send(event) }
        func apply(_ event: TurnEvent) async { await driver.apply(event) }
        func result(of number: Int) async -> ControlResult { await driver.result(of: number) }
        func finish() { driver.finish() }
        var machine: TurnMachine { driver.machine }
    }

    static let offline = SatelliteError(.serverUnreachable, "No socket.")
    static let stream = TurnMachine.Settings(streamsRoom: false, maxUtteranceSamples: 16_000, timeoutSeconds: 60)
    static let wake = TurnMachine.Settings(streamsRoom: true, maxUtteranceSamples: 16_000, timeoutSeconds: 60)
    static let record = TurnMachine.Settings(streamsRoom: false, maxUtteranceSamples: 16_000, timeoutSeconds: nil)
    static let speaking = TurnMachine.Settings(streamsRoom: false, maxUtteranceSamples: 16_000, timeoutSeconds: 60, speaksOffline: true)
    static let ended = TurnEvent.period(samples: 320, decision: .ended(.silence))
    static let played = TurnEvent.played(failure: nil, sameConnection: true)

    /// A machine that has taken `events` (ready first unless `ready` is false).
    static func machine(_ settings: TurnMachine.Settings, ready: Bool = true, _ events: [TurnEvent]) -> TurnMachine {
        var machine = TurnMachine(settings: settings)
        if ready { _ = machine.handle(.ready) }
        for event in events { _ = machine.handle(event) }
        return machine
    }

    struct Row: CustomTestStringConvertible {
        let name: String
        let machine: TurnMachine
        let event: TurnEvent
        /// The action that awaits, held while `during` comes.
        let holdAt: TurnAction
        let during: TurnEvent
        var testDescription: String { name }
    }

    /// Each action that awaits in the transports, held in a list with actions after it where the machine has one.
    static let rows: [Row] = [
        Row(name: "the microphone put right for a superseded turn, then a cancel",
            machine: machine(stream, [.request(number: 1, hold: false, offline: offline)]),
            event: .request(number: 2, hold: false, offline: offline), holdAt: .microphone, during: .cancel(number: 2)),
        Row(name: "the microphone opening, then a mute",
            machine: machine(stream, []),
            event: .request(number: 1, hold: false, offline: offline), holdAt: .openMicrophone(number: 1), during: .mute),
        Row(name: "the microphone opening once ready, then a request",
            machine: machine(stream, ready: false, []),
            event: .ready, holdAt: .microphone, during: .request(number: 1, hold: false, offline: offline)),
        Row(name: "the microphone closing at shutdown, then a request",
            machine: machine(stream, [.request(number: 1, hold: false, offline: offline)]),
            event: .shutdown, holdAt: .microphone, during: .request(number: 2, hold: false, offline: offline)),
        Row(name: "the awake cue, then the end of speech",
            machine: machine(stream, [.request(number: 1, hold: false, offline: offline)]),
            event: .microphoneOpened(number: 1), holdAt: .cue(.awake), during: ended),
        Row(name: "the done cue, then a cancel",
            machine: machine(stream, [.request(number: 1, hold: false, offline: offline)]),
            event: ended, holdAt: .cue(.done), during: .cancel(number: 1)),
        Row(name: "the done cue of the server's own turn, then its reply",
            machine: machine(wake, [.serverState(.listening, text: nil)]),
            event: .serverState(.thinking, text: "lights on"), holdAt: .cue(.done), during: .reply(text: "R", via: "v")),
        Row(name: "the speaker stopping for a request, then the reply's end",
            machine: machine(wake, [.audio]),
            event: .request(number: 1, hold: false, offline: offline), holdAt: .stopPlayback, during: played),
        Row(name: "the speaker stopping for a cancel, then the reply's end",
            machine: machine(stream, [.request(number: 1, hold: false, offline: offline), ended, .audio]),
            event: .cancel(number: 1), holdAt: .stopPlayback, during: played),
        Row(name: "the error cue of a failed request, then a new request",
            machine: machine(record, [.request(number: 1, hold: false, offline: offline), ended]),
            event: .requestFailed(SatelliteError(.serverRefused, "E")), holdAt: .errorCue,
            during: .request(number: 2, hold: false, offline: offline)),
        Row(name: "the notice being made, then a cancel",
            machine: machine(speaking, ready: false, []),
            event: .request(number: 1, hold: false, offline: offline), holdAt: .prepareNotice, during: .cancel(number: 1)),
    ]

    /// What the machine's tables say: `event`'s actions to their end, then `during`'s (it came while
    /// `holdAt` was carried out), each event an action leads to queued when that action has been carried out.
    static func expected(_ row: Row) -> [TurnAction] {
        var machine = row.machine
        var queue = [row.event]
        var actions: [TurnAction] = []
        var delivered = false
        while !queue.isEmpty {
            for action in machine.handle(queue.removeFirst()) {
                actions.append(action)
                if !delivered, action == row.holdAt {
                    delivered = true
                    queue.append(row.during)
                }
                if let next = Effects.followUp(action) { queue.append(next) }
            }
        }
        precondition(delivered, "\(row.name): the machine never asks for \(row.holdAt)")
        return actions
    }

    @Test(arguments: rows)
    func anEventDuringAnActionWaitsForItsList(_ row: Row) async {
        let effects = Effects(row.machine)
        async let loop: Void = effects.drive()
        await effects.hold(at: row.holdAt)
        await effects.send(row.event)
        await effects.untilHeld()
        await effects.send(row.during)
        await effects.release()
        await effects.finish()
        await loop
        let done = await effects.done
        #expect(done == Self.expected(row))
        // Said plainly too: the list the held action belongs to has ended before anything of `during`.
        var first = row.machine
        let list = first.handle(row.event)
        #expect(Array(done.prefix(list.count)) == list)
    }

    @Test("A push turn's result is given as its finish is carried out, and waits for its caller")
    func results() async {
        let effects = Effects(Self.machine(Self.record, []))
        async let loop: Void = effects.drive()
        await effects.send(.request(number: 1, hold: false, offline: Self.offline))
        await effects.apply(.cancel(number: 1))
        #expect(await effects.result(of: 1) == .cancelled(.cancelledByUser))
        await effects.finish()
        await loop
    }

    @Test("Once the loop has ended, an event is not applied and its caller is not kept waiting")
    func afterFinish() async {
        let effects = Effects(Self.machine(Self.stream, ready: false, []))
        async let loop: Void = effects.drive()
        await effects.finish()
        await loop
        await effects.apply(.ready)
        #expect(await effects.done.isEmpty)
        #expect(await effects.machine.ready == false)
    }

    @Test("Cancelling the loop's task does not end it: shutdown is still carried out")
    func cancelled() async {
        let effects = Effects(Self.machine(Self.stream, [.request(number: 1, hold: false, offline: Self.offline)]))
        await withDiscardingTaskGroup { group in
            group.addTask { await effects.drive() }
            group.cancelAll()
            await effects.apply(.shutdown)
            await effects.finish()
        }
        #expect(await effects.done.last == .microphone)
        #expect(await effects.result(of: 1) == .cancelled(.shuttingDown))
    }
}
