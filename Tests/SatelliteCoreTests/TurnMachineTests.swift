import Testing
@testable import ControlCore
@testable import SatelliteCore

/// The turn machine, state by event: every stage meets every kind of event, and each row says
/// the actions that follow and the stage it leaves (ListenStream carries the actions out).
@Suite struct TurnMachineTests {
    static let settings = TurnMachine.Settings(streamsRoom: false, maxUtteranceSamples: 16_000, timeoutSeconds: 60)
    static let offline = SatelliteError(.serverUnreachable, "No socket.")

    /// A ready machine in `stage`, with push turn 1 under way unless idle.
    static func machine(in stage: TurnStage, hold: Bool = false, settings: TurnMachine.Settings = settings) -> TurnMachine {
        var machine = TurnMachine(settings: settings)
        _ = machine.handle(.ready)
        if stage == .idle { return machine }
        _ = machine.handle(.request(number: 1, hold: hold, offline: offline))
        if stage == .listening { return machine }
        _ = machine.handle(hold ? .release(number: 1) : .period(samples: 320, decision: .ended(.silence)))
        if stage == .thinking { return machine }
        _ = machine.handle(.audio)
        return machine
    }

    /// The end of a turn: its timer stops, the state goes idle, the microphone follows, its caller gets `result`.
    static func deliver(_ number: Int, _ result: ControlResult) -> [TurnAction] {
        [.cancelTimer(number: number), .phase(nil), .microphone, .finish(number: number, result)]
    }

    /// An error result: the error cue sounds to its end first.
    static func failed(_ number: Int, _ result: ControlResult) -> [TurnAction] {
        [.cancelTimer(number: number), .microphone, .errorCue, .phase(nil), .finish(number: number, result)]
    }

    static func start(_ number: Int) -> [TurnAction] {
        [.dropFrames, .beginCapture, .phase(.listening), .startTimer(number: number), .openMicrophone(number: number)]
    }

    static let refused = SatelliteError(.serverRefused, "E")

    static let events: [TurnEvent] = [
        .request(number: 2, hold: false, offline: offline), .cancel(number: 1), .release(number: 1), .microphoneOpened(number: 1),
        .period(samples: 320, decision: .nothingHeard), .microphoneFailed(message: "M"), .ready, .serverState(.idle, text: nil),
        .reply(text: "R", via: "v"), .audio, .badAudio(why: "B", bytes: 9), .answerLost(why: "L"),
        .played(failure: nil, sameConnection: true), .stop, .timeout(number: 1), .disconnected(why: "D"), .mute, .unmute,
        .answered(heard: "H", reply: "R", via: "v", audio: false), .requestFailed(refused), .notice(ready: true), .shutdown,
        // Push mode: the siblings decide no server's wake, and a decision moves nothing.
        .arbitrated(won: true), .arbitrated(won: false),
    ]

    struct Row {
        let stage: TurnStage
        let event: TurnEvent
        let actions: [TurnAction]
        let after: TurnStage
    }

    static let table: [Row] = {
        let superseded = deliver(1, .cancelled(.superseded))
        let timedOut = failed(1, .failure(.timeout, "The server gave no answer within 60 s."))
        let dropped = failed(1, .failure(.serverUnreachable, "The connection to the server ended during the turn. D"))
        let badAudioAside: [TurnAction] = [.report("B", fields: ["bytes": "9"]), .cue(.error), .spoke]
        let play: [TurnAction] = [.dropFrames, .phase(.speaking), .play]
        let reply: TurnAction = .reply(text: "R", via: "v")
        func rows(_ stage: TurnStage, _ cells: [([TurnAction], TurnStage)]) -> [Row] {
            precondition(cells.count == events.count, "a row for every event")
            return zip(events, cells).map { Row(stage: stage, event: $0, actions: $1.0, after: $1.1) }
        }
        return rows(.idle, [
            (start(2), .listening),
            ([], .idle), ([], .idle), ([], .idle), ([], .idle), ([], .idle),
            ([.microphone], .idle),
            ([.phase(nil)], .idle),
            ([reply], .idle),
            (play, .speaking),
            ([.report("B", fields: ["bytes": "9"]), .phase(nil), .cue(.error), .spoke], .idle),
            ([], .idle), ([], .idle), ([], .idle), ([], .idle),
            ([.phase(nil), .microphone], .idle),
            ([.microphone], .idle),
            ([], .idle), ([], .idle), ([], .idle), ([], .idle),
            ([.microphone], .idle),
            ([], .idle), ([], .idle),
        ]) + rows(.listening, [
            ([.abandon] + superseded + start(2), .listening),
            ([.abandon] + deliver(1, .cancelled(.cancelledByUser)), .idle),
            ([], .listening),
            ([.cue(.awake)], .listening),
            ([.dropFrames, .abandon] + deliver(1, .cancelled(.nothingHeard)), .idle),
            ([.abandon] + failed(1, .failure(.microphoneUnavailable, "M")), .idle),
            ([.microphone], .listening),
            ([], .listening),
            ([reply], .listening),
            ([], .listening),
            (badAudioAside, .listening),
            ([], .listening), ([], .listening), ([], .listening),
            ([.abandon] + timedOut, .idle),
            (dropped + [.phase(nil), .microphone], .idle),
            ([.dropFrames, .abandon] + deliver(1, .error(.mutedWhileListening)), .idle),
            ([], .listening),
            // Not answered before it was sent.
            ([], .listening), ([], .listening), ([], .listening),
            ([.abandon] + deliver(1, .cancelled(.shuttingDown)) + [.microphone], .idle),
            ([], .listening), ([], .listening),
        ]) + rows(.thinking, [
            ([.abandon] + superseded + start(2), .listening),
            ([.abandon] + deliver(1, .cancelled(.cancelledByUser)), .idle),
            ([], .thinking), ([], .thinking), ([], .thinking), ([], .thinking),
            ([.microphone], .thinking),
            // Idle before the server said thinking: not about this turn yet.
            ([], .thinking),
            ([reply], .thinking),
            (play, .speaking),
            ([.spoke] + failed(1, .failure(.badAnswer, "B")), .idle),
            (failed(1, .failure(.badAnswer, "L The answer cannot be played.")), .idle),
            ([], .thinking), ([], .thinking),
            ([.abandon] + timedOut, .idle),
            (dropped + [.phase(nil), .microphone], .idle),
            // Past its capture, a turn finishes and its answer plays.
            ([.microphone], .thinking),
            ([], .thinking),
            ([.heard("H"), reply] + deliver(1, .completed(["heard": "H", "reply": "R", "via": "v"])), .idle),
            (failed(1, .error(refused)), .idle),
            ([], .thinking),
            ([.abandon] + deliver(1, .cancelled(.shuttingDown)) + [.microphone], .idle),
            ([], .thinking), ([], .thinking),
        ]) + rows(.speaking, [
            ([.stopPlayback] + superseded + start(2), .listening),
            // The reply is stopping; the stage is speaking until it has.
            ([.stopPlayback] + deliver(1, .cancelled(.cancelledByUser)), .speaking),
            ([], .speaking), ([], .speaking), ([], .speaking), ([], .speaking),
            ([.microphone], .speaking),
            ([], .speaking),
            ([reply], .speaking),
            ([], .speaking),
            (badAudioAside, .speaking),
            ([], .speaking),
            ([.dropFrames, .spoke] + deliver(1, .completed(["heard": "", "reply": "", "via": ""])), .idle),
            ([.stopPlayback], .speaking),
            (timedOut, .speaking),
            // The answer has come: it plays to its end.
            ([.microphone], .speaking),
            ([.microphone], .speaking),
            ([], .speaking), ([], .speaking), ([], .speaking), ([], .speaking),
            ([.stopPlayback] + deliver(1, .cancelled(.shuttingDown)) + [.microphone], .speaking),
            ([], .speaking), ([], .speaking),
        ])
    }()

    @Test func theTableCoversEveryStageAndEveryEvent() {
        #expect(Self.table.count == TurnStage.allCases.count * Self.events.count)
        for stage in TurnStage.allCases {
            #expect(Self.table.filter { $0.stage == stage }.count == Self.events.count, "stage \(stage)")
        }
    }

    @Test func eachStageMeetsEachEvent() {
        for row in Self.table {
            var machine = Self.machine(in: row.stage)
            #expect(machine.stage == row.stage)
            let actions = machine.handle(row.event)
            #expect(actions == row.actions, "\(row.stage) × \(row.event)")
            #expect(machine.stage == row.after, "\(row.stage) × \(row.event)")
        }
    }

    @Test func everyPushTurnGetsExactlyOneResult() {
        // Whatever comes after a turn's end, its caller is not answered twice.
        for row in Self.table where row.stage != .idle {
            var machine = Self.machine(in: row.stage)
            var results = machine.handle(row.event).filter { if case .finish(1, _) = $0 { true } else { false } }.count
            for event in Self.events { results += machine.handle(event).filter { if case .finish(1, _) = $0 { true } else { false } }.count }
            #expect(results == 1, "\(row.stage) × \(row.event)")
        }
    }

    // MARK: Sequences the table cannot show

    @Test func aRequestIsRefusedWhenMutedOrNotReady() {
        var muted = TurnMachine(settings: Self.settings, muted: true)
        _ = muted.handle(.ready)
        #expect(muted.handle(.request(number: 1, hold: false, offline: Self.offline)) == [.finish(number: 1, .error(.microphoneMuted))])
        var unready = TurnMachine(settings: Self.settings)
        #expect(unready.handle(.request(number: 1, hold: false, offline: Self.offline)) == Self.failed(1, .error(Self.offline)))
        #expect(unready.turn == nil)
    }

    @Test func theEndpointerEndsACaptureAndTheAnswerIsAwaited() {
        var machine = Self.machine(in: .listening)
        #expect(machine.handle(.period(samples: 320, decision: .speaking)) == [])
        #expect(machine.handle(.period(samples: 320, decision: .ended(.silence)))
            == [.endCapture, .decided, .phase(.thinking), .cue(.done), .microphone])
        #expect(machine.stage == .thinking)
        #expect(!machine.wantsMicrophone)
    }

    @Test func aHeldTurnEndsWhenLetGoOrAtTheLongestUtterance() {
        var let_go = Self.machine(in: .listening, hold: true)
        #expect(let_go.handle(.period(samples: 320, decision: .nothingHeard)) == [], "a held turn ignores the endpointer")
        #expect(let_go.handle(.release(number: 1)) == [.endCapture, .phase(.thinking), .cue(.done), .microphone])
        var early = Self.machine(in: .idle)
        _ = early.handle(.request(number: 1, hold: true, offline: Self.offline))
        #expect(early.handle(.release(number: 1)) == [], "let go before any sound: the next period ends it")
        #expect(early.handle(.period(samples: 320, decision: .waiting)).first == .endCapture)
        var longest = Self.machine(in: .listening, hold: true)
        #expect(longest.handle(.period(samples: 15_999, decision: .speaking)) == [])
        #expect(longest.handle(.period(samples: 1, decision: .speaking)).first == .endCapture)
        #expect(longest.stage == .thinking)
    }

    @Test func theServerGoingIdleWithoutAReplyEndsTheTurnWithWhatWasHeard() {
        var nothing = Self.machine(in: .thinking)
        #expect(nothing.handle(.serverState(.thinking, text: nil)) == [])
        #expect(nothing.handle(.serverState(.idle, text: nil)) == Self.deliver(1, .cancelled(.nothingHeard)))

        var heard = Self.machine(in: .thinking)
        #expect(heard.handle(.serverState(.thinking, text: "lights")) == [.heard("lights")])
        #expect(heard.handle(.serverState(.idle, text: nil)) == Self.failed(1,
            .failure(.serverRefused, "The server heard \u{201C}lights\u{201D} but gave no answer; its own log says why.")))

        var answered = Self.machine(in: .thinking)
        _ = answered.handle(.serverState(.thinking, text: "lights"))
        _ = answered.handle(.reply(text: "Done.", via: "house"))
        #expect(answered.handle(.serverState(.idle, text: nil)) == [], "a reply came: its WAV is still to play")
        _ = answered.handle(.audio)
        #expect(answered.handle(.played(failure: nil, sameConnection: true)) == [.dropFrames, .spoke]
            + Self.deliver(1, .completed(["heard": "lights", "reply": "Done.", "via": "house"])))
    }

    @Test func aReplyThatCannotBePlayedFailsTheTurn() {
        let fault = SpeakerFault(device: "hw:9", reason: "gone")
        var machine = Self.machine(in: .speaking)
        #expect(machine.handle(.played(failure: fault, sameConnection: false))
            == [.dropFrames] + Self.failed(1, .failure(.speakerUnavailable, "The answer could not be played on hw:9: gone.")))
        var aside = Self.machine(in: .idle)
        _ = aside.handle(.audio)
        #expect(aside.handle(.played(failure: fault, sameConnection: true))
            == [.dropFrames, .spoke, .report("The answer could not be played on hw:9: gone.", fields: [:]), .phase(nil)])
    }

    static let speaking = TurnMachine.Settings(streamsRoom: false, maxUtteranceSamples: 16_000, timeoutSeconds: 60, speaksOffline: true)

    @Test func anUnreachableHouseIsSaidByTheSatelliteBeforeTheResult() {
        var machine = Self.machine(in: .thinking, settings: Self.speaking)
        #expect(machine.handle(.disconnected(why: "D"))
            == [.cancelTimer(number: 1), .microphone, .phase(.speaking), .prepareNotice, .microphone])
        #expect(machine.stage == .speaking)
        #expect(machine.handle(.timeout(number: 1)) == [], "the notice is not timed out")
        #expect(machine.handle(.notice(ready: true)) == [.play])
        #expect(machine.handle(.played(failure: nil, sameConnection: true)) == [.dropFrames] + Self.deliver(1, .error(SatelliteError(
            .serverUnreachable, "The connection to the server ended during the turn. D The satellite said so itself.", via: "satellite"))))

        var mute = Self.machine(in: .thinking, settings: Self.speaking)
        _ = mute.handle(.requestFailed(SatelliteError(.serverUnreachable, "Away.")))
        _ = mute.handle(.notice(ready: true))
        #expect(mute.handle(.played(failure: SpeakerFault(device: "hw:9", reason: "gone"), sameConnection: true))
            == [.dropFrames] + Self.deliver(1, .failure(.serverUnreachable,
                "Away. The satellite could not say so either: the speaker hw:9 failed: gone.")))

        var silent = Self.machine(in: .thinking, settings: Self.speaking)
        _ = silent.handle(.requestFailed(SatelliteError(.serverUnreachable, "Away.")))
        #expect(silent.handle(.notice(ready: false)) == [.errorCue] + Self.deliver(1, .failure(.serverUnreachable, "Away.")))

        var cancelled = Self.machine(in: .thinking, settings: Self.speaking)
        _ = cancelled.handle(.requestFailed(SatelliteError(.serverUnreachable, "Away.")))
        #expect(cancelled.handle(.cancel(number: 1)) == [.stopPlayback] + Self.deliver(1, .cancelled(.cancelledByUser)))
        #expect(cancelled.handle(.notice(ready: true)) == [], "a notice ready too late is not played")

        var unready = TurnMachine(settings: Self.speaking)
        #expect(unready.handle(.request(number: 1, hold: false, offline: Self.offline)).last == .prepareNotice,
                "a request with no socket is told so aloud")
    }

    @Test func aReplyStoppedBeforeTheNoticeDoesNotEndIt() {
        var machine = TurnMachine(settings: Self.speaking, ready: true)
        _ = machine.handle(.audio)
        _ = machine.handle(.request(number: 1, hold: false, offline: Self.offline))
        _ = machine.handle(.period(samples: 320, decision: .ended(.silence)))
        _ = machine.handle(.requestFailed(SatelliteError(.serverUnreachable, "Away.")))
        #expect(machine.handle(.played(failure: nil, sameConnection: true)) == [.dropFrames])
        #expect(machine.turn?.notice != nil)
        #expect(machine.handle(.notice(ready: true)) == [.play])
    }

    @Test func afterShutdownRequestsAreRefused() {
        var machine = Self.machine(in: .idle)
        _ = machine.handle(.shutdown)
        #expect(machine.handle(.request(number: 3, hold: false, offline: Self.offline)) == [.finish(number: 3, .cancelled(.shuttingDown))])
    }

    @Test func theServersOwnTurnIsShownAndCued() {
        var machine = Self.machine(in: .idle, settings: .init(streamsRoom: true, maxUtteranceSamples: 16_000, timeoutSeconds: 60))
        #expect(machine.wantsMicrophone)
        #expect(machine.periodRoute == .room)
        #expect(machine.handle(.serverState(.listening, text: nil)) == [.phase(.listening), .cue(.awake)])
        #expect(machine.handle(.serverState(.listening, text: nil)) == [.phase(.listening)], "the awake sound once")
        #expect(!machine.quiet)
        #expect(machine.handle(.serverState(.thinking, text: "hi")) == [.phase(.thinking), .cue(.done), .heard("hi")])
        #expect(machine.handle(.audio) == [.dropFrames, .phase(.speaking), .play])
        #expect(machine.periodRoute == .drop, "nothing goes up while a reply plays")
        #expect(machine.handle(.serverState(.idle, text: nil)) == [], "idle waits for the reply to end")
        #expect(machine.handle(.played(failure: nil, sameConnection: true)) == [.dropFrames, .spoke, .phase(nil)])
        #expect(machine.quiet)
    }

    @Test("with echo cancelling the room goes on up while the server's reply plays; without, nothing does; a push turn's reply is never sent",
          arguments: [false, true])
    func periodRouteWhileAReplyPlays(bargeIn: Bool) {
        for streamsRoom in [false, true] {
            let settings = TurnMachine.Settings(streamsRoom: streamsRoom, maxUtteranceSamples: 16_000, timeoutSeconds: 60, bargeIn: bargeIn)
            let room: PeriodRoute = streamsRoom ? .room : .ignore
            let expected: [TurnStage: PeriodRoute] = [.idle: room, .listening: .turn, .thinking: .ignore, .speaking: bargeIn ? .ignore : .drop]
            for stage in TurnStage.allCases {
                #expect(Self.machine(in: stage, settings: settings).periodRoute == expected[stage], "\(stage), streamsRoom \(streamsRoom)")
            }
            // The server's own turn: its reply plays with no push turn.
            var machine = Self.machine(in: .idle, settings: settings)
            _ = machine.handle(.serverState(.thinking, text: "hi"))
            _ = machine.handle(.audio)
            #expect(machine.periodRoute == (bargeIn ? room : .drop))
            #expect(machine.handle(.stop) == [.stopPlayback], "the server's stop ends the reply")
            // A request over the reply (the local wake word, or parlourctl listen) stops it and listens at once.
            #expect(machine.handle(.request(number: 2, hold: false, offline: Self.offline)) == [.stopPlayback] + Self.start(2))
            // Until the reply has stopped, only a cancelled echo may go up as the question.
            #expect(machine.periodRoute == (bargeIn ? .turn : .drop))
            _ = machine.handle(.played(failure: nil, sameConnection: true))
            #expect(machine.periodRoute == .turn)
        }
    }

    @Test func theServerWakingOverItsReplyStopsItAndListens() {
        var machine = Self.machine(in: .idle, settings: .init(streamsRoom: true, maxUtteranceSamples: 16_000, timeoutSeconds: 60, bargeIn: true))
        _ = machine.handle(.serverState(.thinking, text: "hi"))
        _ = machine.handle(.audio)
        _ = machine.handle(.serverState(.idle, text: nil))
        #expect(machine.handle(.stop) == [.stopPlayback], "at once, whoever answers the wake")
        #expect(machine.handle(.serverState(.listening, text: nil)) == [], "the siblings decide first")
        #expect(machine.handle(.arbitrated(won: true)) == [.cue(.awake)], "the reply is still stopping")
        #expect(machine.stage == .speaking)
        #expect(machine.handle(.played(failure: nil, sameConnection: true)) == [.dropFrames, .spoke, .phase(.listening)])
        #expect(machine.stage == .listening)
        #expect(machine.periodRoute == .room)
    }

    @Test func mutingWhileTheServerListensDropsItsQuestion() {
        var machine = Self.machine(in: .idle, settings: .init(streamsRoom: true, maxUtteranceSamples: 16_000, timeoutSeconds: 60))
        _ = machine.handle(.serverState(.listening, text: nil))
        #expect(machine.handle(.mute) == [.dropServerTurn, .microphone])
        #expect(!machine.wantsMicrophone)
        #expect(machine.handle(.mute) == [], "muting twice does nothing more")
        #expect(machine.handle(.unmute) == [.microphone])
        #expect(machine.wantsMicrophone)
    }

    // MARK: The siblings decide the server's wake

    static let wakeMode = TurnMachine.Settings(streamsRoom: true, maxUtteranceSamples: 16_000, timeoutSeconds: 60)

    @Test("the server's wake is shown and cued only once this satellite answers; then as a lone satellite shows it")
    func theWinnerShowsTheServersTurnOnceDecided() {
        // Decided after the server said listening: what it said is shown then.
        var machine = Self.machine(in: .idle, settings: Self.wakeMode)
        #expect(machine.handle(.stop) == [])
        #expect(machine.deciding)
        #expect(machine.handle(.serverState(.listening, text: nil)) == [], "no cue, no listening, before the decision")
        #expect(machine.stage == .listening)
        #expect(machine.handle(.arbitrated(won: true)) == [.phase(.listening), .cue(.awake)])
        #expect(!machine.deciding)
        #expect(machine.handle(.serverState(.thinking, text: "hi")) == [.phase(.thinking), .cue(.done), .heard("hi")])
        #expect(machine.handle(.reply(text: "R", via: "v")) == [.reply(text: "R", via: "v")])
        #expect(machine.handle(.audio) == [.dropFrames, .phase(.speaking), .play])

        // Decided before the server said listening: it is shown as it comes.
        var early = Self.machine(in: .idle, settings: Self.wakeMode)
        _ = early.handle(.stop)
        #expect(early.handle(.arbitrated(won: true)) == [])
        #expect(early.handle(.serverState(.listening, text: nil)) == [.phase(.listening), .cue(.awake)])

        // The server gave up before the decision: nothing to show.
        var gaveUp = Self.machine(in: .idle, settings: Self.wakeMode)
        _ = gaveUp.handle(.stop)
        _ = gaveUp.handle(.serverState(.listening, text: nil))
        _ = gaveUp.handle(.serverState(.idle, text: nil))
        #expect(gaveUp.handle(.arbitrated(won: true)) == [])
        #expect(gaveUp.stage == .idle)

        // A decision comes once: a late second one changes nothing.
        #expect(machine.handle(.arbitrated(won: false)) == [])
        #expect(!machine.standingDown)
    }

    @Test("another satellite answers: the server's turn is dropped, and nothing of it is shown, cued or played")
    func theLoserDropsTheServersTurn() {
        var machine = Self.machine(in: .idle, settings: Self.wakeMode)
        _ = machine.handle(.stop)
        _ = machine.handle(.serverState(.listening, text: nil))
        #expect(machine.handle(.arbitrated(won: false)) == [.dropServerTurn])
        #expect(machine.standingDown)
        // Whatever the server still says of that turn before the socket closes goes unshown.
        #expect(machine.handle(.serverState(.thinking, text: "hi")) == [])
        #expect(machine.handle(.reply(text: "R", via: "v")) == [])
        #expect(machine.handle(.serverState(.speaking, text: nil)) == [])
        #expect(machine.handle(.audio) == [], "never played")
        #expect(!machine.playing)
        #expect(machine.handle(.stop) == [])
        #expect(!machine.deciding, "a wake on the socket being dropped is not decided again")
        // The socket reopened: the next wake is decided afresh.
        #expect(machine.handle(.disconnected(why: "D")) == [.phase(nil), .microphone])
        #expect(!machine.standingDown)
        #expect(machine.handle(.ready) == [.microphone])
        _ = machine.handle(.stop)
        #expect(machine.handle(.serverState(.listening, text: nil)) == [])
        #expect(machine.handle(.arbitrated(won: true)) == [.phase(.listening), .cue(.awake)])

        // Lost while the socket is down: nothing to drop.
        var offline = Self.machine(in: .idle, settings: Self.wakeMode)
        _ = offline.handle(.stop)
        _ = offline.handle(.disconnected(why: "D"))
        #expect(offline.handle(.arbitrated(won: false)) == [], "the decision of a socket gone is not this one's")
    }

    @Test("muted or in a push turn, no server's wake is shown, whoever answers it")
    func mutedOrPushingNothingIsDecided() {
        var muted = Self.machine(in: .idle, settings: Self.wakeMode)
        _ = muted.handle(.stop)
        _ = muted.handle(.serverState(.listening, text: nil))
        #expect(muted.handle(.mute) == [.dropServerTurn, .microphone])
        #expect(muted.handle(.arbitrated(won: true)) == [], "muted, the turn is not shown")

        var pushing = Self.machine(in: .listening, settings: Self.wakeMode)
        _ = pushing.handle(.stop)
        #expect(!pushing.deciding)
    }

    @Test func staleTimersAndCancelsAreIgnored() {
        var machine = Self.machine(in: .listening)
        _ = machine.handle(.request(number: 2, hold: false, offline: Self.offline))
        #expect(machine.handle(.timeout(number: 1)) == [])
        #expect(machine.handle(.cancel(number: 1)) == [])
        #expect(machine.handle(.microphoneOpened(number: 1)) == [])
        #expect(machine.turn?.number == 2)
    }
}
