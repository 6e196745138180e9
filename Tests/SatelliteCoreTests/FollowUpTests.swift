import Testing
@testable import ControlCore
@testable import SatelliteCore

/// Listening again without the wake word after an answer that asks something: the decision, and the
/// machine's follow-up turn, event by event.
@Suite struct FollowUpTests {
    @Test("a question is told by its last mark, closing quotes and spaces aside", arguments: [
        ("Which lights, the kitchen or the hall?", true),
        ("For how long? ", true),
        ("\u{201C}Which one?\u{201D}", true),
        ("He asked \"why?\" \n", true),
        ("'Now?'", true),
        ("\u{00AB}Lequel?\u{00BB}", true),
        ("\u{4EC0}\u{4E48}\u{FF1F}", true),
        ("The lights are on.", false),
        ("Is it? No, it is not.", false),
        ("?!", false),
        ("", false),
        ("   ", false),
        ("\"\"", false),
    ])
    func asks(text: String, question: Bool) {
        #expect(FollowUp.asks(text) == question)
    }

    @Test("the mode and the count in a row decide", arguments: [
        (FollowUp.Mode.question, "Which one?", 0, 3, true),
        (.question, "Which one?", 2, 3, true),
        (.question, "Which one?", 3, 3, false),
        (.question, "Done.", 0, 3, false),
        (.never, "Which one?", 0, 3, false),
        (.always, "Done.", 0, 3, true),
        (.always, "", 0, 3, true),
        (.always, "Done.", 1, 1, false),
        (.question, "Which one?", 0, 0, false),
    ])
    func follows(mode: FollowUp.Mode, reply: String, inARow: Int, max: Int, expected: Bool) {
        #expect(FollowUp(mode: mode, waitMs: 2000, maxInARow: max).follows(reply, inARow: inARow) == expected)
    }

    @Test func aFollowUpWaitsItsOwnTimeForSpeechToStart() {
        let turn = Endpointer.Settings(silenceMs: 700, maxUtteranceMs: 9000, leadingSilenceMs: 2500, ignoreOnsetMs: 300)
        #expect(FollowUp(waitMs: 1500).endpointing(turn)
            == Endpointer.Settings(silenceMs: 700, maxUtteranceMs: 9000, leadingSilenceMs: 1500, ignoreOnsetMs: 300))
    }

    // MARK: The machine

    static let offline = SatelliteError(.serverUnreachable, "No socket.")

    static func settings(_ mode: FollowUp.Mode = .question, max: Int = 3, streamsRoom: Bool = false,
                         timeoutSeconds: Int64? = 60) -> TurnMachine.Settings {
        .init(streamsRoom: streamsRoom, maxUtteranceSamples: 16_000, timeoutSeconds: timeoutSeconds,
              followUp: FollowUp(mode: mode, waitMs: 2000, maxInARow: max))
    }

    /// Push turn `number` answered with `reply`, its answer playing.
    static func answering(_ machine: inout TurnMachine, _ number: Int, _ reply: String) {
        _ = machine.handle(.request(number: number, hold: false, offline: offline))
        _ = machine.handle(.period(samples: 320, decision: .ended(.silence)))
        _ = machine.handle(.reply(text: reply, via: "house"))
        _ = machine.handle(.audio)
    }

    static func completed(_ reply: String) -> ControlResult {
        .completed(["heard": "", "reply": .string(reply), "via": "house"])
    }

    /// The answer has played: the caller has its result, then the follow-up begins, listening all along.
    static func followed(_ number: Int, _ reply: String, by followUp: Int) -> [TurnAction] {
        [.dropFrames, .spoke, .cancelTimer(number: number), .finish(number: number, completed(reply)),
         .dropFrames, .followUp(number: followUp), .phase(.listening), .startTimer(number: followUp), .openMicrophone(number: followUp)]
    }

    static func notFollowed(_ number: Int, _ reply: String) -> [TurnAction] {
        [.dropFrames, .spoke, .cancelTimer(number: number), .phase(nil), .microphone, .finish(number: number, completed(reply))]
    }

    /// A machine whose answer asked a question, its follow-up (-1) waiting for speech.
    static func waiting(_ settings: TurnMachine.Settings = settings()) -> TurnMachine {
        var machine = TurnMachine(settings: settings, ready: true)
        answering(&machine, 1, "Which one?")
        _ = machine.handle(.played(failure: nil, sameConnection: true))
        return machine
    }

    @Test func aQuestionIsFollowedAndAStatementIsNot() {
        var asked = TurnMachine(settings: Self.settings(), ready: true)
        Self.answering(&asked, 1, "Which one?")
        #expect(asked.handle(.played(failure: nil, sameConnection: true)) == Self.followed(1, "Which one?", by: -1))
        #expect(asked.stage == .listening)
        #expect(asked.wantsMicrophone)
        #expect(asked.periodRoute == .turn)
        #expect(asked.turn?.begun == false, "nothing goes up before speech starts")

        var told = TurnMachine(settings: Self.settings(), ready: true)
        Self.answering(&told, 1, "The lights are on.")
        #expect(told.handle(.played(failure: nil, sameConnection: true)) == Self.notFollowed(1, "The lights are on."))
        #expect(told.stage == .idle)
    }

    struct Row: Sendable {
        let event: TurnEvent
        let actions: [TurnAction]
        let after: TurnStage
    }

    static let quietEnd: [TurnAction] = [.cancelTimer(number: -1), .phase(nil), .microphone]
    static let captureEnded: [TurnAction] = [.endCapture, .decided, .phase(.thinking), .cue(.done), .microphone]

    /// A follow-up waiting for speech, event by event: it sends nothing until speech starts, and ends
    /// quietly, with no result for anyone, whatever ends it.
    static let waitingRows: [Row] = [
        Row(event: .request(number: 2, hold: false, offline: offline), actions: quietEnd
            + [.dropFrames, .beginCapture, .phase(.listening), .startTimer(number: 2), .openMicrophone(number: 2)], after: .listening),
        Row(event: .cancel(number: -1), actions: quietEnd, after: .idle),
        Row(event: .cancel(number: 1), actions: [], after: .listening),
        Row(event: .microphoneOpened(number: -1), actions: [.cue(.awake)], after: .listening),
        Row(event: .period(samples: 320, decision: .waiting), actions: [], after: .listening),
        Row(event: .period(samples: 320, decision: .speaking), actions: [.speechBegan], after: .listening),
        Row(event: .period(samples: 320, decision: .ended(.silence)), actions: [.speechBegan] + captureEnded, after: .thinking),
        Row(event: .period(samples: 320, decision: .nothingHeard), actions: [.dropFrames] + quietEnd, after: .idle),
        Row(event: .microphoneFailed(message: "M"), actions: [.cancelTimer(number: -1), .microphone, .errorCue, .phase(nil)], after: .idle),
        Row(event: .timeout(number: -1), actions: quietEnd, after: .idle),
        Row(event: .serverState(.idle, text: nil), actions: [], after: .listening),
        Row(event: .stop, actions: [], after: .listening),
        Row(event: .disconnected(why: "D"), actions: quietEnd + [.phase(nil), .microphone], after: .idle),
        Row(event: .mute, actions: [.dropFrames] + quietEnd, after: .idle),
        Row(event: .shutdown, actions: quietEnd + [.microphone], after: .idle),
    ]

    @Test(arguments: waitingRows)
    func aFollowUpWaitingForSpeech(row: Row) {
        var machine = Self.waiting()
        #expect(machine.handle(row.event) == row.actions)
        #expect(machine.stage == row.after)
    }

    @Test func speechOpensATurnLikeAnyPushTurnWithNoCaller() {
        var machine = Self.waiting()
        #expect(machine.handle(.period(samples: 320, decision: .speaking)) == [.speechBegan])
        #expect(machine.handle(.period(samples: 320, decision: .speaking)) == [], "speech begins once")
        #expect(machine.handle(.cancel(number: -1)) == [.abandon] + Self.quietEnd, "once begun, the server's turn is dropped")

        var answered = Self.waiting()
        _ = answered.handle(.period(samples: 320, decision: .speaking))
        #expect(answered.handle(.period(samples: 320, decision: .ended(.silence))) == Self.captureEnded)
        _ = answered.handle(.reply(text: "Done.", via: "house"))
        _ = answered.handle(.audio)
        #expect(answered.handle(.played(failure: nil, sameConnection: true)) == [.dropFrames, .spoke] + Self.quietEnd)
        #expect(answered.stage == .idle)
    }

    @Test func theLimitHoldsAndAPersonAskingCountsAfresh() {
        var machine = TurnMachine(settings: Self.settings(max: 2), ready: true)
        Self.answering(&machine, 1, "Which one?")
        var number = -1
        for _ in 0..<2 {
            #expect(machine.handle(.played(failure: nil, sameConnection: true)).contains(.followUp(number: number)))
            _ = machine.handle(.period(samples: 320, decision: .speaking))
            _ = machine.handle(.period(samples: 320, decision: .ended(.silence)))
            _ = machine.handle(.reply(text: "And then?", via: "house"))
            _ = machine.handle(.audio)
            number -= 1
        }
        #expect(machine.handle(.played(failure: nil, sameConnection: true)) == [.dropFrames, .spoke] + Self.quietEnd.map {
            $0 == .cancelTimer(number: -1) ? .cancelTimer(number: -2) : $0 })
        #expect(machine.stage == .idle)
        Self.answering(&machine, 2, "Which one?")
        #expect(machine.handle(.played(failure: nil, sameConnection: true)) == Self.followed(2, "Which one?", by: -3))
    }

    @Test func neverMeansNever() {
        var machine = TurnMachine(settings: Self.settings(.never), ready: true)
        Self.answering(&machine, 1, "Which one?")
        #expect(machine.handle(.played(failure: nil, sameConnection: true)) == Self.notFollowed(1, "Which one?"))
    }

    @Test func alwaysFollowsAStatementToo() {
        var machine = TurnMachine(settings: Self.settings(.always), ready: true)
        Self.answering(&machine, 1, "Done.")
        #expect(machine.handle(.played(failure: nil, sameConnection: true)) == Self.followed(1, "Done.", by: -1))
    }

    @Test func anAnswerThatDidNotPlayToItsEndAsksNothing() {
        // Cancelled over the answer: the caller has its result, and the question was not heard out.
        var cancelled = TurnMachine(settings: Self.settings(), ready: true)
        Self.answering(&cancelled, 1, "Which one?")
        _ = cancelled.handle(.cancel(number: 1))
        #expect(cancelled.handle(.played(failure: nil, sameConnection: true)) == [.dropFrames, .spoke, .phase(nil)])
        // The speaker failed.
        var failed = TurnMachine(settings: Self.settings(), ready: true)
        Self.answering(&failed, 1, "Which one?")
        #expect(!failed.handle(.played(failure: SpeakerFault(device: "hw:9", reason: "gone"), sameConnection: true))
            .contains(.followUp(number: -1)))
        // Muted while it played: the microphone stays shut.
        var muted = TurnMachine(settings: Self.settings(), ready: true)
        Self.answering(&muted, 1, "Which one?")
        _ = muted.handle(.mute)
        #expect(!muted.handle(.played(failure: nil, sameConnection: true)).contains(.followUp(number: -1)))
        #expect(muted.stage == .idle)
    }

    @Test func theServersOwnTurnIsFollowedUnlessItWokeOverTheAnswer() {
        let wake = Self.settings(streamsRoom: true)
        var machine = TurnMachine(settings: wake, ready: true)
        _ = machine.handle(.serverState(.listening, text: nil))
        _ = machine.handle(.serverState(.thinking, text: "lights"))
        _ = machine.handle(.reply(text: "Which room?", via: "house"))
        _ = machine.handle(.audio)
        #expect(machine.handle(.played(failure: nil, sameConnection: true))
            == [.dropFrames, .spoke, .dropFrames, .followUp(number: -1), .phase(.listening), .startTimer(number: -1),
                .openMicrophone(number: -1)])
        #expect(machine.periodRoute == .turn, "the room stops going up while the follow-up waits")

        // Barge-in: the server heard its wake word over the answer, so its own turn goes on instead.
        var woke = TurnMachine(settings: .init(streamsRoom: true, maxUtteranceSamples: 16_000, timeoutSeconds: 60, bargeIn: true,
                                               followUp: FollowUp()), ready: true)
        _ = woke.handle(.serverState(.thinking, text: "lights"))
        _ = woke.handle(.reply(text: "Which room?", via: "house"))
        _ = woke.handle(.audio)
        #expect(woke.handle(.stop) == [.stopPlayback])
        _ = woke.handle(.serverState(.listening, text: nil))
        #expect(woke.handle(.played(failure: nil, sameConnection: true)) == [.dropFrames, .spoke, .phase(.listening)])
    }

    @Test func theRecordTransportFollowsItsAnswerToo() {
        var machine = TurnMachine(settings: Self.settings(timeoutSeconds: nil), ready: true)
        _ = machine.handle(.request(number: 1, hold: false, offline: Self.offline))
        _ = machine.handle(.period(samples: 320, decision: .ended(.silence)))
        _ = machine.handle(.answered(heard: "lights", reply: "Which room?", via: "house", audio: true))
        _ = machine.handle(.audio)
        #expect(machine.handle(.played(failure: nil, sameConnection: true)).suffix(4)
            == [.dropFrames, .followUp(number: -1), .phase(.listening), .openMicrophone(number: -1)])
        #expect(machine.handle(.period(samples: 320, decision: .speaking)) == [.speechBegan])

        // An answer with nothing to play is not heard: it asks nothing aloud.
        var silent = TurnMachine(settings: Self.settings(timeoutSeconds: nil), ready: true)
        _ = silent.handle(.request(number: 1, hold: false, offline: Self.offline))
        _ = silent.handle(.period(samples: 320, decision: .ended(.silence)))
        _ = silent.handle(.answered(heard: "lights", reply: "Which room?", via: "house", audio: false))
        #expect(silent.stage == .idle)
    }
}
