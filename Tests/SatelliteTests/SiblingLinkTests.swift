// The arbitration port over real UDP on loopback: two links in this process
// exchange claims; what a device without the token (or a broken one) sends is
// refused, counted by reason, told to the journal at most once a minute, and
// the link goes on taking claims.
@testable import Satellite
import SatelliteCore
import Glibc
import Synchronization
import Testing

/// A link bound on loopback and reading, and the claims it hands on.
final class RunningLink: Sendable {
    let link: SiblingLink
    let port: UInt16
    let claims: AsyncStream<HeardClaim>
    private let task: Task<Void, Never>

    init(keys: HouseKeys?, bus: EventBus = EventBus()) throws {
        link = SiblingLink(port: 0, keys: keys, bus: bus)
        guard case .success(let port) = link.open() else { throw TestFailure("the link could not bind a port") }
        self.port = port
        let (claims, heard) = AsyncStream.makeStream(of: HeardClaim.self)
        self.claims = claims
        link.deliver { heard.yield($0) }
        task = Task { [link] in await link.run() }
    }

    /// This link as a sibling on loopback, named `name`.
    func sibling(_ name: String, addresses: [String] = ["127.0.0.1"]) -> Sibling {
        Sibling(name: name, room: "", addresses: addresses, port: port)
    }

    func stop() async {
        task.cancel()
        await task.value
    }
}

/// The notices a bus carried that tell of refusals.
final class RefusalNotices: Sendable {
    private let seen = Mutex<[[String: String]]>([])
    var all: [[String: String]] { seen.withLock { $0 } }

    var tap: @Sendable (SatelliteEvent) -> Void {
        { [self] event in
            if case .notice(_, _, let fields) = event, fields.keys.contains(where: { $0.hasPrefix("refused_") }) {
                seen.withLock { $0.append(fields) }
            }
        }
    }
}

@Suite("The siblings' link", .timeLimit(.minutes(1)))
struct SiblingLinkTests {
    static let keys = HouseKeys(token: "house-token")
    static let other = HouseKeys(token: "another-house")

    static func claim(_ name: String, keys: HouseKeys = keys, house: [UInt8]? = nil, session: UInt64 = 7, sequence: UInt64 = 1,
                      levelDb: Double = -30, ageMs: Int = 0) -> [UInt8] {
        SiblingClaim(house: house ?? keys.house, session: session, sequence: sequence, levelDb: levelDb, probability: 0.9,
                     ageMs: ageMs, name: name, room: "kitchen").encoded(key: keys.claimKey)
    }

    @Test("two links exchange claims; an address that cannot be reached costs nothing")
    func exchange() async throws {
        let a = try RunningLink(keys: Self.keys)
        let b = try RunningLink(keys: Self.keys)
        #expect(a.port != b.port && a.port != 0)
        a.link.send(Self.claim("a", levelDb: -21), to: [b.sibling("b", addresses: ["not-an-address", "192.0.2.1", "127.0.0.1"])])
        var fromA = b.claims.makeAsyncIterator()
        let heard = try #require(await fromA.next())
        #expect(heard.claim.name == "a")
        #expect(heard.claim.levelDb == -21)
        #expect(heard.claim.room == "kitchen")

        // Over IPv6 where the machine has it, and over IPv4 (mapped, on the dual-stack socket): the second is a replay.
        b.link.send(Self.claim("b", session: 9), to: [a.sibling("a", addresses: ["::1", "127.0.0.1"])])
        var fromB = a.claims.makeAsyncIterator()
        #expect(await fromB.next()?.claim.name == "b")
        await a.stop()
        await b.stop()
    }

    @Test("an IPv4 address is reached through the IPv6 socket as ::ffff:a.b.c.d")
    func mapped() throws {
        let address = try #require(SiblingLink.address("192.168.1.20", port: 4242, family: AF_INET6))
        #expect(address.family == AF_INET6)
        let v6 = withUnsafeBytes(of: address.storage) { $0.load(as: sockaddr_in6.self) }
        #expect(UInt16(bigEndian: v6.sin6_port) == 4242)
        #expect(withUnsafeBytes(of: v6.sin6_addr) { Array($0) } == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 192, 168, 1, 20])
        #expect(SiblingLink.address("fe80::1", port: 1, family: AF_INET) == nil)
        #expect(SiblingLink.address("kitchen.local", port: 1, family: AF_INET6) == nil)
    }

    @Test("forged, another house's, replayed, stale, malformed, unknown and oversized datagrams are refused and counted; the link goes on")
    func refusals() async throws {
        let notices = RefusalNotices()
        let running = try RunningLink(keys: Self.keys, bus: EventBus(taps: [notices.tap]))
        var heard = running.claims.makeAsyncIterator()
        let peer = try UDPPeer()
        let first = Self.claim("kitchen", sequence: 1)
        try peer.send(first, to: running.port)
        #expect(await heard.next()?.claim.sequence == 1)
        let second = Self.claim("kitchen", sequence: 2)
        try peer.send(second, to: running.port)
        #expect(await heard.next()?.claim.sequence == 2)

        try peer.send(second, to: running.port)  // a copy at once (to another address): dropped, not counted
        try peer.send(first, to: running.port)  // replayed
        try peer.send(Self.claim("kitchen", keys: Self.other, sequence: 4), to: running.port)  // wrongHouse
        try peer.send(Self.claim("kitchen", keys: Self.other, house: Self.keys.house, sequence: 4), to: running.port)  // forged
        try peer.send(Self.claim("kitchen", sequence: 4, ageMs: 5_000), to: running.port)  // stale
        try peer.send(Array("PSC".utf8) + [1, 0, 0, 0], to: running.port)  // malformed
        try peer.send(Array("PSC".utf8) + [2] + [UInt8](repeating: 0, count: 80), to: running.port)  // unknownVersion
        try peer.send([UInt8](repeating: 0x50, count: 60_000), to: running.port)  // oversized
        try peer.send(Self.claim("kitchen", sequence: 3), to: running.port)
        #expect(await heard.next()?.claim.sequence == 3)

        let facts = running.link.current
        #expect(facts.admitted == 3)
        #expect(facts.refused == [.replayed: 1, .wrongHouse: 1, .forged: 1, .stale: 1, .malformed: 1, .unknownVersion: 1, .oversized: 1])
        // The first refusal is told at once; the rest wait for the next report, a minute on.
        #expect(notices.all.count == 1)
        #expect(notices.all.first?["refused_replayed"] == "1")
        await running.stop()
    }

    @Test("a flood of refused datagrams makes one journal record, not one each")
    func flood() async throws {
        let notices = RefusalNotices()
        let running = try RunningLink(keys: Self.keys, bus: EventBus(taps: [notices.tap]))
        var heard = running.claims.makeAsyncIterator()
        let peer = try UDPPeer()
        var sent = 0
        for sequence in 1...400 {
            // Paced by the link's answer now and then, so the socket's buffer never drops what the count expects.
            try peer.send(Self.claim("kitchen", keys: Self.other, sequence: UInt64(sequence)), to: running.port)
            sent += 1
            if sequence % 50 == 0 {
                try peer.send(Self.claim("den", sequence: UInt64(sequence)), to: running.port)
                #expect(await heard.next()?.claim.name == "den")
            }
        }
        #expect(running.link.current.refused == [.wrongHouse: sent])
        #expect(notices.all.count == 1)
        await running.stop()
    }

    @Test("the keys follow the token: a claim under the old one is refused after a change, and none is read with no token")
    func rekey() async throws {
        let running = try RunningLink(keys: Self.keys)
        var heard = running.claims.makeAsyncIterator()
        let peer = try UDPPeer()
        running.link.rekey(Self.other)
        try peer.send(Self.claim("kitchen", sequence: 1), to: running.port)
        try peer.send(Self.claim("kitchen", keys: Self.other, sequence: 2), to: running.port)
        #expect(await heard.next()?.claim.sequence == 2)
        #expect(running.link.current.refused == [.wrongHouse: 1])

        running.link.rekey(nil)
        try peer.send(Self.claim("kitchen", keys: Self.other, sequence: 3), to: running.port)
        // Nothing is handed on with no token, so there is no event to await: the count of what was not read is.
        while running.link.current.ignored == 0 { try await Task.sleep(for: .milliseconds(5)) }
        running.link.rekey(Self.other)
        try peer.send(Self.claim("kitchen", keys: Self.other, sequence: 4), to: running.port)
        #expect(await heard.next()?.claim.sequence == 4)
        #expect(running.link.current.admitted == 2)
        await running.stop()
    }

    @Test("a port in use is not bound, and says why")
    func portInUse() async throws {
        let running = try RunningLink(keys: Self.keys)
        let second = SiblingLink(port: Int(running.port), keys: Self.keys, bus: EventBus())
        guard case .failure(let failure) = second.open() else {
            Issue.record("a second link bound the same port")
            return
        }
        #expect(failure.errno == EADDRINUSE)
        #expect(second.current.port == nil)
        #expect(second.current.failure?.errno == EADDRINUSE)
        await running.stop()
    }
}
