// The runner that owns the daemon's parts, with parts made for the test, each
// scenario as swift-service-lifecycle's ServiceGroup tests are written: the
// order parts start and stop in, a part that fails taking the daemon down, a
// part asked to stop draining on its own, parts that end on their own during
// shutdown, a signal while a part starts, a part that overstays the deadline.
// Every order of events is ServiceLifecycleTests' table; these run it for real.
import Foundation
import Glibc
import Satellite
import SatelliteCore
import Synchronization
import Testing

@Suite("The service runner starts parts in order and stops them in reverse", .timeLimit(.minutes(1)))
struct ServiceRunnerTests {
    /// What the parts did, in order.
    final class Log: Sendable {
        private let lines = Mutex<[String]>([])
        func add(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    /// Opened once; waiting on it ignores cancellation (as a part stuck in a driver would).
    final class Latch: Sendable {
        private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
        func open() {
            for waiter in state.withLock({ state in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }) { waiter.resume() }
        }
        func wait() async {
            await withCheckedContinuation { waiter in
                let open = state.withLock { state in
                    if !state.open { state.waiters.append(waiter) }
                    return state.open
                }
                if open { waiter.resume() }
            }
        }
    }

    static func part(_ name: String, _ log: Log) -> Service {
        Service(name) {
            log.add("start \(name)")
            await Service.untilCancelled()
            log.add("stop \(name)")
        }
    }

    /// Any overstay is a failure of the test: every part here ends when it is stopped.
    static func runner(_ services: [Service], bus: EventBus = EventBus()) -> ServiceRunner {
        ServiceRunner(services, deadline: .seconds(30), bus: bus) { parts in Issue.record("overstayed: \(parts)") }
    }

    @Test("on a signal, every part is stopped in the reverse of the order it started in")
    func order() async {
        let log = Log()
        let (signals, send) = AsyncStream.makeStream(of: Int32.self)
        // The last part starts only after the others said so; it sends the signal.
        let services = [Self.part("a", log), Self.part("b", log), Self.part("c", log),
                        Service("signaller") { log.add("start signaller"); send.yield(SIGTERM); await Service.untilCancelled() }]
        let ending = await Self.runner(services).run(signals: signals)
        #expect(ending == .signal(SIGTERM))
        #expect(log.all == ["start a", "start b", "start c", "start signaller", "stop c", "stop b", "stop a"])
    }

    @Test("a part that ends on its own stops the others, and the failure is journaled with its name")
    func failure() async {
        let log = Log()
        let bus = EventBus()
        let events = bus.subscribe()
        let services = [Self.part("a", log), Self.part("b", log), Service("fragile") { log.add("fragile gave up") }]
        let ending = await Self.runner(services, bus: bus).run(signals: AsyncStream { _ in })
        #expect(ending == .failed("fragile"))
        #expect(log.all == ["start a", "start b", "fragile gave up", "stop b", "stop a"])
        bus.finish()
        var said: [String: String]?
        for await event in events {
            if case .notice(.error, let message, let fields) = event, message.contains("fragile") { said = fields }
        }
        #expect(said?["part"] == "fragile")
    }

    @Test("a part that fails while starting stops the ones started before it, and the rest never start")
    func failureWhileStarting() async {
        let log = Log()
        let services = [Self.part("a", log), Service("broken") { _ in log.add("broken") }, Self.part("never", log)]
        let ending = await Self.runner(services).run(signals: AsyncStream { _ in })
        #expect(ending == .failed("broken"))
        #expect(log.all == ["start a", "broken", "stop a"])
    }

    @Test("a part stopped by asking is not cancelled: it drains what it holds, then ends")
    func asked() async {
        let log = Log()
        let (queue, feed) = AsyncStream.makeStream(of: String.self)
        let (signals, send) = AsyncStream.makeStream(of: Int32.self)
        let drainer = Service("drainer", stop: .ask {
            feed.yield("last words")
            feed.finish()
        }) {
            for await line in queue { log.add(line) }
            log.add("drained")
        }
        let services = [drainer, Service("signaller") { send.yield(SIGINT); await Service.untilCancelled() }]
        let ending = await Self.runner(services).run(signals: signals)
        #expect(ending == .signal(SIGINT))
        #expect(log.all == ["last words", "drained"])
    }

    @Test("a part that ends on its own during shutdown, before its turn, is neither asked nor waited for: the rest stop in reverse, with no deadline",
          arguments: [false, true])
    func endsDuringShutdown(stoppedByAsking: Bool) async {
        let log = Log()
        let (signals, send) = AsyncStream.makeStream(of: Int32.self)
        let (release, ended) = (Latch(), Latch())
        let services = [
            Self.part("a", log),
            Service("early", stop: stoppedByAsking ? .ask { log.add("early asked") } : .cancel) {
                await release.wait()
                log.add("early ended")
                ended.open()
            },
            Self.part("b", log),
            // Stopped first: lets "early" end on its own, and ends after it.
            Service("signaller") {
                send.yield(SIGTERM)
                await Service.untilCancelled()
                release.open()
                await ended.wait()
                log.add("stop signaller")
            },
        ]
        let ending = await Self.runner(services).run(signals: signals)
        #expect(ending == .signal(SIGTERM))
        #expect(log.all == ["start a", "start b", "early ended", "stop signaller", "stop b", "stop a"])
    }

    @Test("a signal while a part starts stops it, and the parts after it never start")
    func signalWhileStarting() async {
        let log = Log()
        let (signals, send) = AsyncStream.makeStream(of: Int32.self)
        let services = [
            Self.part("a", log),
            // Never says it started.
            Service("slow") { _ in
                log.add("start slow")
                send.yield(SIGINT)
                await Service.untilCancelled()
                log.add("stop slow")
            },
            Self.part("never", log),
        ]
        let ending = await Self.runner(services).run(signals: signals)
        #expect(ending == .signal(SIGINT))
        #expect(log.all == ["start a", "start slow", "stop slow", "stop a"])
    }

    @Test("a part that fails while a later one starts: the one starting is stopped first, then the rest in reverse")
    func failureOfAnEarlierPartWhileStarting() async {
        let log = Log()
        let failed = Latch()
        let services = [
            Self.part("a", log),
            Service("fragile") {
                await failed.wait()
                log.add("fragile gave up")
            },
            // Never says it started: the failure comes while it starts.
            Service("slow") { _ in
                log.add("start slow")
                failed.open()
                await Service.untilCancelled()
                log.add("stop slow")
            },
            Self.part("never", log),
        ]
        let ending = await Self.runner(services).run(signals: AsyncStream { _ in })
        #expect(ending == .failed("fragile"))
        #expect(log.all == ["start a", "start slow", "fragile gave up", "stop slow", "stop a"])
    }

    @Test("a part that never ends: the deadline names the parts still running, and stopping goes on once it ends")
    func deadline() async {
        let log = Log()
        let (signals, send) = AsyncStream.makeStream(of: Int32.self)
        let overstays = Log()
        let unstuck = Latch()
        let services = [
            Self.part("a", log),
            // Stopped first; deaf to it until the deadline has passed.
            Service("stuck") {
                send.yield(SIGTERM)
                await Service.untilCancelled()
                await unstuck.wait()
                log.add("stop stuck")
            },
        ]
        let runner = ServiceRunner(services, deadline: .milliseconds(50), bus: EventBus()) { parts in
            overstays.add(parts.joined(separator: ", "))
            unstuck.open()
        }
        let ending = await runner.run(signals: signals)
        #expect(ending == .signal(SIGTERM))
        #expect(overstays.all == ["a, stuck"])
        #expect(log.all == ["start a", "stop stuck", "stop a"])
    }
}
