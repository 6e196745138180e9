// The runner that owns the daemon's parts, with parts made for the test: the
// order they start and stop in, a part that fails taking the daemon down, a
// part asked to stop draining on its own. (A part that overstays the deadline
// ends the process, so that path is seen only in the journal of a real daemon.)
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

    static func part(_ name: String, _ log: Log) -> Service {
        Service(name) {
            log.add("start \(name)")
            await Service.untilCancelled()
            log.add("stop \(name)")
        }
    }

    static func runner(_ services: [Service], bus: EventBus = EventBus()) -> ServiceRunner {
        ServiceRunner(services, deadline: .seconds(30), bus: bus) { parts in fatalError("overstayed: \(parts)") }
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
}
