// The turn's one driver, shared by both transports: it owns the TurnMachine,
// queues the events that come, applies them one at a time, and carries each
// event's actions out to their end before it applies the next. Easy to get
// wrong, and why it is here once: the transports are actors whose actions
// await (a cue, stopping playback, opening the microphone), and an event taken
// during such an await would move the machine on while the rest of the old
// list still ran against the new state. Here that event waits in the queue.
// The driver lives on its transport's actor (its loop takes the actor as an
// isolated parameter), so the transport reads the machine's state without a
// hop, and that state never changes during an action. An action that leads
// to an event of its own (the microphone opened, the notice made) sends it,
// to be applied after its list; it never applies it, which would wait for
// itself.
import SatelliteCore

/// What carries a turn's actions out: a transport's socket or request, its microphone and speaker.
protocol TurnEffects: Actor {
    /// Carries `action` out; `audio` came with the event (the answer or the notice a `play` plays).
    func perform(_ action: TurnAction, audio: PCMAudio?) async
    /// The machine has taken an event; its actions follow.
    func moved()
    /// The event's actions have all been carried out.
    func settled()
}

extension TurnEffects {
    func moved() {}
    func settled() {}
}

/// The turn machine, its queue of events and the results of its push turns, on the transport's actor.
final class TurnDriver<Effects: TurnEffects> {
    private struct Entry {
        let event: TurnEvent
        let audio: PCMAudio?
        /// Resumed once the event's actions have been carried out.
        let done: CheckedContinuation<Void, Never>?
    }

    /// The state the events have moved the machine to: it holds still while an event's actions are carried out.
    private(set) var machine: TurnMachine
    private var queue: [Entry] = []
    /// The loop, waiting for an event.
    private var waiting: CheckedContinuation<Void, Never>?
    /// `finish` was called: the loop ends once the queue is empty.
    private var finished = false
    /// The loop has ended: nothing more is applied.
    private var ended = false
    private var results = TurnResults()

    init(_ machine: TurnMachine) {
        self.machine = machine
    }

    /// Queues `event`, to be applied once the events before it have been carried out.
    func send(_ event: TurnEvent, audio: PCMAudio? = nil) {
        enqueue(Entry(event: event, audio: audio, done: nil))
    }

    /// Queues `event` and returns once its actions have been carried out (at once after `run` has ended).
    /// Never from an action: it would wait for itself.
    func apply(_ event: TurnEvent, audio: PCMAudio? = nil, isolation: isolated (any Actor)? = #isolation) async {
        assert(!CarryingOut.action, "An action applied an event and would wait for itself: it sends it.")
        await withCheckedContinuation { done in enqueue(Entry(event: event, audio: audio, done: done)) }
    }

    /// Push turn `number`'s one result, once its `finish` has been carried out (or at once if it has).
    func result(of number: Int, isolation: isolated (any Actor)? = #isolation) async -> ControlResult {
        await withCheckedContinuation { results.wait(for: number, $0) }
    }

    /// `run` returns once nothing is queued: the events sent until then (by the actions too) are still carried out.
    func finish() {
        finished = true
        wake()
    }

    /// Applies the events as they come, each one's actions carried out in order, every one awaited, before
    /// the next is applied; returns after `finish`, once the queue is empty. Cancellation does not end it,
    /// so the transport's last events (shutdown) are still carried out.
    func run(_ effects: isolated Effects) async {
        while true {
            guard !queue.isEmpty else {
                if finished {
                    ended = true
                    return
                }
                await withCheckedContinuation { waiting = $0 }
                continue
            }
            let entry = queue.removeFirst()
            let actions = machine.handle(entry.event)
            effects.moved()
            for action in actions {
                if case .finish(let number, let result) = action { results.give(number, result) }
                await CarryingOut.$action.withValue(true) { await effects.perform(action, audio: entry.audio) }
            }
            effects.settled()
            entry.done?.resume()
        }
    }

    private func enqueue(_ entry: Entry) {
        guard !ended else {
            entry.done?.resume()
            return
        }
        queue.append(entry)
        wake()
    }

    private func wake() {
        waiting?.resume()
        waiting = nil
    }
}

/// Set while the driver carries an action out, so that `apply` from there is caught.
private enum CarryingOut {
    @TaskLocal static var action = false
}
