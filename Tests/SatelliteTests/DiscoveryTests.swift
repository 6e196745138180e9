// Discovery against the real avahi-daemon on a private bus in a network namespace
// (scripts/netns-run): services published with avahi-publish, a daemon stopped
// and started under the running actor. Every wait is for an event, never a sleep.
import Foundation
import Testing
@testable import Satellite
import SatelliteCore

@Suite("discovery with real Avahi", .serialized)
struct DiscoveryTests {
    @Test("a published server is found, resolved and listed once with its TXT, both addresses and its url",
          .timeLimit(.minutes(1)))
    func publishedServerIsFound() async throws {
        let avahi = try RealAvahi()
        let name = "Parlour on den \(UUID().uuidString.prefix(6))"
        try await withDiscovery { discovery, notices in
            let publisher = try await AvahiPublisher.start(
                name: name, port: 8765, txt: ["role=server", "version=1", "token=required", "api=/v1"])

            // One entry however many records: IPv4 and IPv6 merge.
            let list = await discovery.first { list in
                list.first { $0.name == name }.map { Set($0.addresses).isSuperset(of: [avahi.address, "2001:db8::1"]) } ?? false
            }
            let found = try #require(list.first { $0.name == name })
            #expect(list.filter { $0.name == name }.count == 1)
            #expect(found.host == avahi.host)
            #expect(found.port == 8765)
            #expect(found.txt == ["role": "server", "version": "1", "token": "required", "api": "/v1"])
            #expect(found.addresses.first == avahi.address)
            #expect(found.interface == "d0")
            #expect(found.url == "http://\(avahi.host):8765")
            #expect(await discovery.servers.contains(found))
            #expect(await discovery.available)
            #expect(await discovery.bonjour == "ok")

            let notice = await notices.next { $0.message.hasPrefix("Found the Parlour server \"\(name)\"") }
            #expect(notice?.json["server.url"] == .string("http://\(avahi.host):8765"))
            // Said when the first record resolved, over IPv4 or IPv6.
            #expect(notice?.json["server.addresses"]?.stringValue?.isEmpty == false)
            await publisher.stop()
        }
    }

    @Test("a service whose role is phone is ignored, and says so", .timeLimit(.minutes(1)))
    func phoneIsIgnored() async throws {
        _ = try RealAvahi()
        let phone = "Parlour phone \(UUID().uuidString.prefix(6))"
        try await withDiscovery { discovery, notices in
            let publisher = try await AvahiPublisher.start(name: phone, port: 8766, txt: ["role=phone", "version=1"])

            let ignored = await notices.next { $0.message.hasPrefix("Ignored \"\(phone)\"") }
            #expect(ignored?.priority == .debug)
            #expect(await discovery.servers.contains { $0.name == phone } == false)
            await publisher.stop()
        }
    }

    @Test("a server whose host has no address yet is said once, and found once its address comes", .timeLimit(.minutes(1)))
    func hostWithoutAddress() async throws {
        _ = try RealAvahi()
        let name = "Parlour on loft \(UUID().uuidString.prefix(6))"
        let host = "loft-\(UUID().uuidString.prefix(6).lowercased()).local"
        try await withDiscovery { discovery, notices in
            // Its SRV record names a host nobody answers for: Avahi's resolver gives up after a few seconds.
            let service = try await AvahiPublisher.start(name: name, port: 8768, txt: ["role=server"], host: host)
            let said = await notices.next { $0.message.hasPrefix("Bonjour shows \"\(name)\"") }
            #expect(said?.priority == .notice)
            #expect(said?.message.contains("its address cannot be found") == true, "\(said?.message ?? "")")
            #expect(await discovery.servers.contains { $0.name == name } == false)

            // The host wakes: the record is looked up again, without being announced afresh.
            let address = try await AvahiPublisher.address(host: host, "198.51.100.7")
            let list = await discovery.first { $0.contains { $0.name == name } }
            #expect(list.first { $0.name == name }?.addresses == ["198.51.100.7"])
            _ = await notices.next { $0.message.hasPrefix("Found the Parlour server \"\(name)\"") }
            // Once for the name, though its IPv4 and IPv6 records both failed.
            #expect(notices.seen.filter { $0.message.hasPrefix("Bonjour shows \"\(name)\"") }.count == 1)
            await address.stop()
            await service.stop()
        }
    }

    @Test("a server that stops advertising leaves the list, with a journal line", .timeLimit(.minutes(1)))
    func withdrawnServerIsRemoved() async throws {
        let avahi = try RealAvahi()
        let name = "Parlour on attic \(UUID().uuidString.prefix(6))"
        try await withDiscovery { discovery, notices in
            let publisher = try await AvahiPublisher.start(name: name, port: 8767, txt: ["role=server"])
            _ = await discovery.first { $0.contains { $0.name == name } }

            await publisher.stop()
            let list = await discovery.first { !$0.contains { $0.name == name } }
            #expect(!list.contains { $0.name == name })
            let gone = await notices.next { $0.message.hasPrefix("The Parlour server \"\(name)\"") }
            #expect(gone?.message.contains("http://\(avahi.host):8767") == true)
        }
    }

    @Test("avahi-daemon stopped and started under a running Discovery: one notice each way, then it finds again",
          .timeLimit(.minutes(1)))
    func daemonRestart() async throws {
        let avahi = try RealAvahi()
        let before = "Parlour before \(UUID().uuidString.prefix(6))"
        let after = "Parlour after \(UUID().uuidString.prefix(6))"
        try await withDiscovery { discovery, notices in
            _ = await notices.next { $0.json["bonjour"] == "ok" }
            let early = try await AvahiPublisher.start(name: before, port: 8768, txt: ["role=server"])
            _ = await discovery.first { $0.contains { $0.name == before } }

            try await avahi.ctl("stop")
            await early.stop()
            do {
                let gone = await notices.next { $0.json["bonjour"] == "unavailable" }
                #expect(gone?.priority == .warning)
                #expect(gone?.message.contains("avahi-daemon is not running") == true)
                #expect(gone?.json["avahi.error"]?.stringValue?.contains("(-23)") == true)  // AVAHI_ERR_DISCONNECTED
                #expect(await discovery.available == false)
                #expect(await discovery.bonjour == "unavailable")
                #expect(await discovery.servers.isEmpty)
            }
            try await avahi.ctl("start")

            let back = await notices.next { $0.json["bonjour"] == "ok" }
            #expect(back?.message.contains("avahi-daemon is back") == true)
            #expect(notices.seen.filter { $0.json["bonjour"] == "unavailable" }.count == 1)
            #expect(await discovery.available)

            let late = try await AvahiPublisher.start(name: after, port: 8769, txt: ["role=server"])
            let list = await discovery.first { $0.contains { $0.name == after && $0.addresses.contains(avahi.address) } }
            #expect(list.first { $0.name == after }?.url == "http://\(avahi.host):8769")
            await late.stop()
        }
    }

    @Test("with avahi-daemon absent at the start it waits, says so once, and browses when the daemon comes",
          .timeLimit(.minutes(1)))
    func daemonAbsentAtStart() async throws {
        let avahi = try RealAvahi()
        try await avahi.ctl("stop")
        try await withDiscovery { discovery, notices in
            let absent = await notices.next { $0.json["bonjour"] == "unavailable" }
            #expect(absent != nil)
            #expect(await discovery.available == false)
            try await avahi.ctl("start")
            _ = await notices.next { $0.json["bonjour"] == "ok" }
            #expect(notices.seen.filter { $0.json["bonjour"] == "unavailable" }.count == 1)
            #expect(await discovery.available)
        }
    }
}

/// The Avahi that scripts/netns-run set up. Outside it every test here fails,
/// with a message saying how to run them, rather than passing without testing.
/// Runs a Discovery for the body and stops it after, even when the body throws;
/// a daemon the body stopped is started again so the next test finds it.
private func withDiscovery(_ body: (Discovery, Notices) async throws -> Void) async throws {
    let bus = EventBus()
    let notices = Notices(bus.subscribe(bufferingNewest: 1024))
    let discovery = Discovery(bus: bus)
    let task = Task { await discovery.run() }
    let outcome: Result<Void, any Error>
    do {
        try await body(discovery, notices)
        outcome = .success(())
    } catch {
        outcome = .failure(error)
    }
    task.cancel()
    await task.value
    if let control = ProcessInfo.processInfo.environment["PARLOUR_TEST_AVAHI_CTL"] {
        _ = try? await Subprocess.run(control, ["start"])
    }
    try outcome.get()
}

extension Discovery {
    /// The first list that satisfies the predicate, the current one included.
    nonisolated func first(where predicate: ([DiscoveredServer]) -> Bool) async -> [DiscoveredServer] {
        for await list in await changes() where predicate(list) { return list }
        return []
    }
}

/// The notices published on the bus, awaited in order; what went by is kept in `seen`.
private final class Notices: @unchecked Sendable {
    // Used by one test task at a time.
    private var iterator: AsyncStream<SatelliteEvent>.Iterator
    private(set) var seen: [SatelliteEvent] = []

    init(_ stream: AsyncStream<SatelliteEvent>) {
        iterator = stream.makeAsyncIterator()
    }

    /// The next notice that matches, or nil if the bus ends first.
    func next(where matches: (SatelliteEvent) -> Bool) async -> SatelliteEvent? {
        while let event = await iterator.next() {
            guard case .notice = event else { continue }
            seen.append(event)
            if matches(event) { return event }
        }
        return nil
    }
}
