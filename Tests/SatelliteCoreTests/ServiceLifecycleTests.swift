import Glibc
import SatelliteCore
import Testing

/// When the daemon's parts start and stop, row by row: a number of parts, then each event with the
/// actions it must give (ServiceRunner carries them out). Parts end on their own before, during and
/// after shutdown, in every order; one never ends; one fails while starting; a signal comes while
/// one starts.
@Suite struct ServiceLifecycleTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let parts: Int
        let steps: [(ServiceLifecycle.Event, [ServiceLifecycle.Action])]
        var testDescription: String { name }
    }

    /// Three parts started one after another, the first start already done.
    static let threeStarted: [(ServiceLifecycle.Event, [ServiceLifecycle.Action])] = [
        (.started(0), [.start(1)]),
        (.started(1), [.start(2)]),
        (.started(2), []),
    ]

    static let rows: [Row] = [
        Row(name: "a signal stops the parts one at a time, the last started first", parts: 3, steps: threeStarted + [
            (.signal(SIGTERM), [.shutDown(.signal(SIGTERM)), .stop(2)]),
            (.ended(2), [.stop(1)]),
            (.ended(1), [.stop(0)]),
            (.ended(0), [.finished(.signal(SIGTERM))]),
        ]),
        Row(name: "a part that ends on its own before shutdown is a failure, and is not stopped again", parts: 3, steps: threeStarted + [
            (.ended(1), [.shutDown(.failed(1)), .stop(2)]),
            (.ended(2), [.stop(0)]),
            (.ended(0), [.finished(.failed(1))]),
        ]),
        Row(name: "the last part failing stops the one before it next", parts: 3, steps: threeStarted + [
            (.ended(2), [.shutDown(.failed(2)), .stop(1)]),
            (.ended(1), [.stop(0)]),
            (.ended(0), [.finished(.failed(2))]),
        ]),
        Row(name: "a part that ends on its own during shutdown, before its turn, is crossed off and never asked", parts: 3, steps: threeStarted + [
            (.signal(SIGINT), [.shutDown(.signal(SIGINT)), .stop(2)]),
            (.ended(1), []),
            (.ended(2), [.stop(0)]),
            (.ended(0), [.finished(.signal(SIGINT))]),
        ]),
        Row(name: "every part before the one asked ends on its own: stopping ends with the one asked", parts: 3, steps: threeStarted + [
            (.signal(SIGTERM), [.shutDown(.signal(SIGTERM)), .stop(2)]),
            (.ended(0), []),
            (.ended(1), []),
            (.ended(2), [.finished(.signal(SIGTERM))]),
        ]),
        Row(name: "a failure during shutdown is not the ending, and a second signal changes nothing", parts: 3, steps: threeStarted + [
            (.signal(SIGTERM), [.shutDown(.signal(SIGTERM)), .stop(2)]),
            (.signal(SIGINT), []),
            (.ended(0), []),
            (.ended(2), [.stop(1)]),
            (.ended(1), [.finished(.signal(SIGTERM))]),
        ]),
        Row(name: "the deadline names exactly the parts still running, in their order, whichever ended", parts: 4, steps: [
            (.started(0), [.start(1)]), (.started(1), [.start(2)]), (.started(2), [.start(3)]), (.started(3), []),
            (.signal(SIGTERM), [.shutDown(.signal(SIGTERM)), .stop(3)]),
            (.ended(1), []),
            (.ended(3), [.stop(2)]),
            (.deadline, [.overstayed([0, 2])]),
            // If the daemon lives on past it (only tests do), stopping goes on where it was.
            (.ended(2), [.stop(0)]),
            (.ended(0), [.finished(.signal(SIGTERM))]),
            (.deadline, []),
        ]),
        Row(name: "a part that never ends, the first asked: the deadline names all", parts: 2, steps: [
            (.started(0), [.start(1)]), (.started(1), []),
            (.signal(SIGTERM), [.shutDown(.signal(SIGTERM)), .stop(1)]),
            (.deadline, [.overstayed([0, 1])]),
        ]),
        Row(name: "a failure while starting: the parts started are stopped in reverse, the rest never start", parts: 4, steps: [
            (.started(0), [.start(1)]),
            (.started(1), [.start(2)]),
            (.ended(2), [.shutDown(.failed(2)), .stop(1)]),
            (.ended(1), [.stop(0)]),
            (.ended(0), [.finished(.failed(2))]),
        ]),
        Row(name: "an earlier part failing while a later one starts: the one starting is stopped first", parts: 4, steps: [
            (.started(0), [.start(1)]),
            (.started(1), [.start(2)]),
            (.ended(0), [.shutDown(.failed(0)), .stop(2)]),
            (.started(2), []),
            (.ended(2), [.stop(1)]),
            (.ended(1), [.finished(.failed(0))]),
        ]),
        Row(name: "a signal while a part starts: it is stopped, and those after it never start", parts: 3, steps: [
            (.started(0), [.start(1)]),
            (.signal(SIGTERM), [.shutDown(.signal(SIGTERM)), .stop(1)]),
            (.started(1), []),
            (.ended(1), [.stop(0)]),
            (.ended(0), [.finished(.signal(SIGTERM))]),
        ]),
        Row(name: "the first part failing to start: nothing else starts, nothing is left to stop", parts: 3, steps: [
            (.ended(0), [.shutDown(.failed(0)), .finished(.failed(0))]),
        ]),
        Row(name: "a part that ends while it is stopped, after another ended on its own: each is crossed off once", parts: 2, steps: [
            (.started(0), [.start(1)]), (.started(1), []),
            (.signal(SIGTERM), [.shutDown(.signal(SIGTERM)), .stop(1)]),
            (.ended(0), []),
            (.ended(0), []),
            (.ended(1), [.finished(.signal(SIGTERM))]),
        ]),
        Row(name: "no parts: a signal ends the run at once", parts: 0, steps: [
            (.deadline, []),
            (.signal(SIGTERM), [.shutDown(.signal(SIGTERM)), .finished(.signal(SIGTERM))]),
        ]),
        Row(name: "the deadline before shutdown is not one, and events after the end change nothing", parts: 1, steps: [
            (.deadline, []),
            (.started(0), []),
            (.signal(SIGTERM), [.shutDown(.signal(SIGTERM)), .stop(0)]),
            (.ended(0), [.finished(.signal(SIGTERM))]),
            (.ended(0), []),
            (.signal(SIGTERM), []),
            (.deadline, []),
        ]),
    ]

    @Test("each event gives the actions of its row", arguments: rows)
    func row(_ row: Row) {
        var lifecycle = ServiceLifecycle(count: row.parts)
        #expect(lifecycle.start() == (row.parts > 0 ? [.start(0)] : []))
        for (number, (event, actions)) in row.steps.enumerated() {
            #expect(lifecycle.handle(event) == actions, "step \(number): \(event)")
        }
    }
}
