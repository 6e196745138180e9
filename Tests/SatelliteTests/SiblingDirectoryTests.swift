// Siblings found with Bonjour, between real daemons that share the test
// namespace's one avahi-daemon (TESTING.md, "A house with several satellites"):
// so every record is of this host, and only Avahi's own-service flag and the
// name tell a satellite from its sibling. A wait is for a watch event, or for
// the watch's first line (the status) when what is awaited may come before it.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("siblings with real Avahi and real daemons", .serialized, .timeLimit(.minutes(2)))
struct SiblingDirectoryTests {
    /// A server that is never there (nothing listens on port 9): with one configured, a daemon holding a
    /// token does not try it on the servers other tests advertise, and the token is the house's all the same.
    static func config(name: String, room: String, port: Int, enabled: Bool = true) -> JSONValue {
        ["name": .string(name), "room": .string(room), "transport": "record", "server": ["url": "http://127.0.0.1:9"],
         "arbitration": ["enabled": .bool(enabled), "port": .number(Double(port))]]
    }

    /// A daemon of its own with a watch open on it, and the status the watch began with. Each step is
    /// bounded and named (a start in this suite once never ended, and its time limit said no more than that):
    /// a daemon never ready prints what it said (DaemonHarness), a watch that never began what the daemon said.
    static func satellite(_ name: String, room: String, token: String?, port: Int, enabled: Bool = true) async throws
        -> (DaemonHarness, Watched) {
        guard let daemon = try await Bounded.wait("\"\(name)\" to be ready", {
            try await DaemonHarness.start(config: config(name: name, room: room, port: port, enabled: enabled), token: token)
        }) else { throw TestFailure("\"\(name)\" was never ready") }
        let watcher = try SocketClient(path: daemon.socket)
        guard let first = try await Bounded.wait("\"\(name)\"'s watch to begin", said: { daemon.stderr }, { await watcher.watch() })
        else { throw TestFailure("\"\(name)\"'s watch never began") }
        return (daemon, Watched(client: watcher, siblings: first["status"]?["arbitration"]?["siblings"]?.arrayValue ?? []))
    }

    /// A watch, and the siblings its first line listed: found before the watch began, a sibling has no event to await.
    struct Watched {
        let client: SocketClient
        let siblings: [JSONValue]

        /// `name`'s room once it is listed: at once if the watch began with it, else at its "Found" event.
        func listed(_ name: String) async -> JSONValue? {
            if let known = siblings.first(where: { $0["name"] == .string(name) }) { return known["room"] }
            return await client.next(where: SiblingDirectoryTests.found(name))?["sibling.room"]
        }
    }

    static func siblings(_ daemon: DaemonHarness) async throws -> [JSONValue] {
        try await daemon.result("status")["response"]?["arbitration"]?["siblings"]?.arrayValue ?? []
    }

    static func found(_ name: String) -> (JSONValue) -> Bool {
        { $0["sibling.name"] == .string(name) && $0["message"]?.stringValue?.hasPrefix("Found the sibling") == true }
    }

    static func gone(_ name: String) -> (JSONValue) -> Bool {
        { $0["sibling.name"] == .string(name) && $0["message"]?.stringValue?.hasSuffix("is no longer advertised.") == true }
    }

    static func ignored(_ name: String) -> (JSONValue) -> Bool {
        { $0["sibling.ignored"] == .string(name) }
    }

    static func advertised(_ event: JSONValue) -> Bool { event["sibling.advertised"] != nil }

    /// What each daemon said of Bonjour and its siblings, for a wait that never ended.
    static func said(_ daemons: [DaemonHarness]) -> String {
        daemons.map { daemon in
            daemon.stderr.split(separator: "\n").filter { $0.contains("sibling") || $0.contains("Bonjour") || $0.contains("vahi") }
                .joined(separator: "\n")
        }.joined(separator: "\n--\n")
    }

    /// The first event that matches each of `matches`, whatever order they come in.
    static func all(_ watcher: SocketClient, _ matches: [(JSONValue) -> Bool]) async -> [JSONValue?] {
        var got = [JSONValue?](repeating: nil, count: matches.count)
        _ = await watcher.next { event in
            for (index, match) in matches.enumerated() where got[index] == nil && match(event) { got[index] = event }
            return !got.contains(nil)
        }
        return got
    }

    /// Whether the daemon's log (every record, from its start) holds `text`, within a bounded number of looks:
    /// for what a daemon says before its watch can begin.
    static func logged(_ daemon: DaemonHarness, _ text: String) async throws -> Bool {
        for _ in 0..<200 {
            if daemon.stderr.contains(text) { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    @Test("two of one house list each other, not themselves; one of another house is listed by neither and lists neither")
    func oneHouse() async throws {
        _ = try RealAvahi()
        let tag = UUID().uuidString.prefix(4)
        let (kitchen, kitchenWatch) = try await Self.satellite("kitchen-\(tag)", room: "kitchen", token: "house-\(tag)", port: 41_001)
        let (hall, hallWatch) = try await Self.satellite("hall-\(tag)", room: "hall", token: "house-\(tag)", port: 41_002)
        #expect(await kitchenWatch.listed("hall-\(tag)") == "hall")
        #expect(await hallWatch.listed("kitchen-\(tag)") == "kitchen")

        // Another house comes: each sees its record and says it is no sibling, and it says so of theirs.
        let (den, _) = try await Self.satellite("den-\(tag)", room: "den", token: "other-house-\(tag)", port: 41_003)
        #expect(await kitchenWatch.client.next(where: Self.ignored("den-\(tag)")) != nil)
        #expect(await hallWatch.client.next(where: Self.ignored("den-\(tag)")) != nil)
        #expect(try await Self.logged(den, "Bonjour shows \"kitchen-\(tag)\", a satellite of another house"))
        #expect(try await Self.logged(den, "Bonjour shows \"hall-\(tag)\", a satellite of another house"))

        let kitchenStatus = try await kitchen.result("status")["response"]?["arbitration"]
        #expect(kitchenStatus == ["enabled": true, "siblings": [["name": .string("hall-\(tag)"), "room": "hall"]]])
        #expect(try await Self.siblings(hall) == [["name": .string("kitchen-\(tag)"), "room": "kitchen"]])
        #expect(try await Self.siblings(den) == [])

        // The human form lists them plainly.
        let text = try await kitchen.ctl("status").out
        #expect(text.contains("Siblings:   hall-\(tag) (hall)"), "\(text)")

        // A room set on one is seen by the other.
        #expect(try await hall.ctl("room", "study").status == 0)
        let moved = await kitchenWatch.client.next { $0["sibling.name"] == .string("hall-\(tag)") && $0["sibling.room"] == "study" }
        #expect(moved?["message"]?.stringValue?.contains("now in the room") == true)
        #expect(try await Self.siblings(kitchen) == [["name": .string("hall-\(tag)"), "room": "study"]])

        // One that stops is gone from the other's list.
        #expect(await hall.stop() == 0)
        #expect(await kitchenWatch.client.next(where: Self.gone("hall-\(tag)")) != nil)
        #expect(try await Self.siblings(kitchen) == [])
        #expect(await kitchen.stop() == 0)
        #expect(await den.stop() == 0)
    }

    @Test("two of one house with the same name: Avahi renames one, and each lists the other under its advertised name")
    func sameName() async throws {
        _ = try RealAvahi()
        let tag = UUID().uuidString.prefix(4)
        let (first, firstWatch) = try await Self.satellite("pi-\(tag)", room: "kitchen", token: "house-\(tag)", port: 41_011)
        #expect(try await Self.logged(first, "other satellites as \"pi-\(tag)\" ("))
        let (second, secondWatch) = try await Self.satellite("pi-\(tag)", room: "hall", token: "house-\(tag)", port: 41_012)
        #expect(await secondWatch.listed("pi-\(tag)") == "kitchen")
        #expect(await firstWatch.listed("pi-\(tag) #2") == "hall")
        #expect(try await Self.logged(second, "other satellites as \"pi-\(tag) #2\" ("))
        #expect(try await Self.siblings(first) == [["name": .string("pi-\(tag) #2"), "room": "hall"]])
        #expect(try await Self.siblings(second) == [["name": .string("pi-\(tag)"), "room": "kitchen"]])
        #expect(await second.stop() == 0)
        #expect(await first.stop() == 0)
    }

    @Test("a sibling killed with SIGKILL, which withdraws nothing itself, is gone from the other's list too")
    func killed() async throws {
        _ = try RealAvahi()
        let tag = UUID().uuidString.prefix(4)
        let (kitchen, kitchenWatch) = try await Self.satellite("kitchen-\(tag)", room: "kitchen", token: "house-\(tag)", port: 41_041)
        let (hall, _) = try await Self.satellite("hall-\(tag)", room: "hall", token: "house-\(tag)", port: 41_042)
        #expect(await kitchenWatch.listed("hall-\(tag)") == "hall")
        // avahi-daemon sees its client's D-Bus connection close, and withdraws what it advertised.
        await hall.kill9()
        #expect(await kitchenWatch.client.next(where: Self.gone("hall-\(tag)")) != nil)
        #expect(try await Self.siblings(kitchen) == [])
        #expect(await kitchen.stop() == 0)
    }

    @Test("with arbitration.enabled false nothing is advertised and no sibling is looked for")
    func disabled() async throws {
        _ = try RealAvahi()
        let tag = UUID().uuidString.prefix(4)
        // Each wait is bounded and named: this test ran past the suite's limit three times.
        let (off, _) = try await Self.satellite("off-\(tag)", room: "den", token: "house-\(tag)", port: 41_021, enabled: false)
        let (on, _) = try await Self.satellite("on-\(tag)", room: "hall", token: "house-\(tag)", port: 41_022)
        let (other, otherWatch) = try await Self.satellite("other-\(tag)", room: "study", token: "house-\(tag)", port: 41_023)
        let said: @Sendable () -> String = { Self.said([off, on, other]) }
        // Both that are on, started after the one that is off, see each other: the one that is off had its time.
        #expect(try await Bounded.wait("\"other\" to list \"on\"", said: said) { await otherWatch.listed("on-\(tag)") } == "hall")

        let browse = try await Bounded.wait("avahi-browse --terminate", said: said) {
            try await Subprocess.run("/usr/bin/avahi-browse", ["--terminate", "--parsable", "--no-db-lookup", SiblingAdvert.serviceType])
        }
        #expect(browse?.out.contains("on-\(tag)") == true, "\(browse?.out ?? "")")
        #expect(browse?.out.contains("off-\(tag)") == false, "\(browse?.out ?? "")")
        let statuses = try await Bounded.wait("the statuses", said: said) {
            (try await off.result("status")["response"]?["arbitration"], try await off.ctl("status").out, try await Self.siblings(other))
        }
        #expect(statuses?.0 == ["enabled": false, "siblings": []])
        #expect(statuses?.1.contains("Siblings:   not looked for") == true)
        #expect(statuses?.2 == [["name": .string("on-\(tag)"), "room": "hall"]])
        let stopped = try await Bounded.wait("the three to stop", said: said) { [await other.stop(), await on.stop(), await off.stop()] }
        #expect(stopped == [0, 0, 0])
    }

    @Test("without a token nothing is advertised; a token set advertises, a token cleared withdraws")
    func tokenComesAndGoes() async throws {
        _ = try RealAvahi()
        let tag = UUID().uuidString.prefix(4)
        let (kitchen, kitchenWatch) = try await Self.satellite("kitchen-\(tag)", room: "kitchen", token: "house-\(tag)", port: 41_031)
        let (hall, hallWatch) = try await Self.satellite("hall-\(tag)", room: "hall", token: nil, port: 41_032)
        #expect(!hall.stderr.contains("sibling.advertised"))

        #expect(try await hall.ctl("token", "set", input: "house-\(tag)\n").status == 0)
        let hallSaw = await Self.all(hallWatch.client, [Self.advertised, Self.found("kitchen-\(tag)")])
        #expect(hallSaw[0]?["sibling.advertised"] == .string("hall-\(tag)"))
        #expect(await kitchenWatch.client.next(where: Self.found("hall-\(tag)")) != nil)

        #expect(try await hall.ctl("token", "clear").status == 0)
        #expect(await kitchenWatch.client.next(where: Self.gone("hall-\(tag)")) != nil)
        // Without the house's token, the hall knows no house, so no sibling either.
        #expect(try await Self.siblings(hall) == [])
        #expect(await hall.stop() == 0)
        #expect(await kitchen.stop() == 0)
    }
}
