// The bus against cancellation: a subscriber's task cancelled while another
// thread publishes to it. Both used to take the bus's lock and the subscriber's
// task status lock in opposite orders, and the daemon hung for good (gdb showed
// both of Swift's pool threads waiting on each other, after a SIGTERM that came
// as a socket opened). The publisher here is a thread of its own, so a deadlock
// stops only it and the cancelling test task, and the time limit still reports it.
// On the bus before the fix it deadlocked within the first ten subscribers, every
// time; 200 keep the test short in a starved parallel pass.
@testable import Satellite
import SatelliteCore
import Glibc
import Synchronization
import Testing

@Suite("The event bus", .timeLimit(.minutes(1)))
struct EventBusTests {
    final class Counters: Sendable {
        let stop = Atomic<Bool>(false)
        let published = Atomic<Int>(0)
    }

    @Test("subscribers cancelled while a thread publishes to them: every one ends, and publishing goes on")
    func cancelWhilePublishing() async {
        let bus = EventBus()
        let counters = Counters()
        let started = SystemThread.start(name: "publisher") {
            while !counters.stop.load(ordering: .relaxed) {
                bus.notice(.debug, "tick")
                counters.published.add(1, ordering: .relaxed)
                // Pacing, not synchronisation: a publisher that never lets go of the lock starved the
                // rest of a parallel pass on two cores (a CI rerun hit the time limit).
                usleep(20)
            }
        }
        #expect(started)
        for _ in 0..<200 {
            let events = bus.subscribe(bufferingNewest: 1)
            let (heard, hears) = AsyncStream.makeStream(of: Void.self)
            // Waits in next() between events, which is where a cancel meets the publisher's yield.
            let subscriber = Task { [events] in
                for await _ in events { hears.yield() }
            }
            // Awaited, not spun on: a spinning test task held one of the pool's two threads.
            for await _ in heard { break }
            subscriber.cancel()
            await subscriber.value
        }
        // The bus still hands events on, to a subscriber of now.
        var after = bus.subscribe(bufferingNewest: 1).makeAsyncIterator()
        #expect(await after.next() == .notice(.debug, "tick", fields: [:]))
        counters.stop.store(true, ordering: .relaxed)
        #expect(counters.published.load(ordering: .relaxed) > 200)
    }
}
