// Finding and trusting one server, from the outside: a real daemon beside the
// real avahi-daemon of scripts/netns-run, test servers on 198.51.100.1 (den.local)
// advertised with avahi-publish, and parlourctl. What a server that must not be
// contacted was sent is read from its own request log.
import Foundation
import Testing
import SatelliteCore

@Suite("finding and pinning the server", .serialized, .timeLimit(.minutes(2)))
struct PinningTests {
    static let config: JSONValue = ["name": "hall-pi", "server": ["retryMs": 2000]]

    static func pinFile(_ daemon: DaemonHarness) throws -> Pin {
        let file = daemon.stateDirectory + "/pin.json"
        return try Pin.decode(try FileSystem.read(file), file: file)
    }

    static func unique(_ name: String) -> String { "\(name) \(UUID().uuidString.prefix(6))" }

    @Test("a published server is listed with its TXT, a phone is not, and the first server that accepts the token is pinned as discovered")
    func discoveredAndPinned() async throws {
        let avahi = try RealAvahi()
        let token = "tok-\(UUID().uuidString)"
        let phoneServer = try await TestServer.start(token: token, host: avahi.address)
        defer { phoneServer.stop() }
        let server = try await TestServer.start(token: token, host: avahi.address)
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config, token: token)
        #expect(try await daemon.result("status")["response"]?["state"] == "unpaired")
        let watch = try await Watcher.start(daemon)

        let phoneName = Self.unique("Parlour phone"), name = Self.unique("Parlour on den")
        let phone = try await AvahiPublisher.start(name: phoneName, port: phoneServer.port, txt: ["role=phone", "version=1"])
        let published = try await AvahiPublisher.start(
            name: name, port: server.port, txt: ["role=server", "version=1", "token=required", "api=/v1"])
        let url = "http://\(avahi.host):\(server.port)"
        let pinned = await watch.notice("Pinned \(name) at \(url) (discovered)")
        #expect(pinned?["how"] == "discovered")

        let listed = try await daemon.result("servers")["response"]?["servers"]?.arrayValue ?? []
        let entry = try #require(listed.first { $0["name"] == .string(name) })
        #expect(entry["url"] == .string(url))
        #expect(entry["port"] == .number(Double(server.port)))
        #expect(entry["txt"] == ["role": "server", "version": "1", "token": "required", "api": "/v1"])
        #expect(entry["addresses"]?.arrayValue?.contains(.string(avahi.address)) == true)
        #expect(entry["pinned"] == true)
        #expect(!listed.contains { $0["name"] == .string(phoneName) })
        let human = try await daemon.ctl("servers")
        #expect(human.out.contains("* \(name)  \(url)  (pinned)"))

        let pin = try Self.pinFile(daemon)
        #expect(pin.url == url && pin.name == name && pin.how == .discovered)
        // The phone is never contacted; the pinned server got /health and /v1/models with the token.
        #expect(try await phoneServer.requests().isEmpty)
        let paths = try await server.requests().map { $0["path"]?.stringValue ?? "" }
        #expect(Array(paths.prefix(2)) == ["/health", "/v1/models"])

        let status = try await daemon.result("status")["response"]
        #expect(status?["server"]?["url"] == .string(url))
        #expect(status?["server"]?["how"] == "discovered")
        #expect(status?["bonjour"] == "ok")
        await published.stop()
        await phone.stop()
        #expect(await daemon.stop() == 0)
    }

    @Test("with the pinned server down, a newcomer is named once in the journal and never contacted; unpin then pins it")
    func newcomerIsNotContacted() async throws {
        let avahi = try RealAvahi()
        let token = "tok-\(UUID().uuidString)"
        let first = try await TestServer.start(token: token, host: avahi.address)
        defer { first.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config, token: token)
        let watch = try await Watcher.start(daemon)

        let firstName = Self.unique("Parlour A")
        let firstAd = try await AvahiPublisher.start(name: firstName, port: first.port, txt: ["role=server"])
        _ = await watch.notice("Pinned \(firstName)")

        await first.shutdown()
        _ = try await daemon.ctl("ask", "are you there")  // the failed request marks the server down at once
        _ = await watch.server { $0["reachable"] == false }
        #expect(try await daemon.result("status")["response"]?["state"] == "offline")

        let second = try await TestServer.start(token: token, host: avahi.address)
        defer { second.stop() }
        let secondName = Self.unique("Parlour B")
        let secondAd = try await AvahiPublisher.start(name: secondName, port: second.port, txt: ["role=server"])
        let named = await watch.notice(secondName, "It was not contacted")
        #expect(named?["newcomer_url"] == .string("http://\(avahi.host):\(second.port)"))
        // Another change to the list: the first newcomer is not named again.
        let thirdName = Self.unique("Parlour C")
        let thirdAd = try await AvahiPublisher.start(name: thirdName, port: 9, txt: ["role=server"])
        _ = await watch.notice(thirdName, "It was not contacted")
        let lines = daemon.stderr.split(separator: "\n").filter { $0.contains(secondName) && $0.contains("not contacted") }
        #expect(lines.count == 1)
        #expect(try await second.requests().isEmpty)
        #expect(try Self.pinFile(daemon).name == firstName)

        // unpin: the search checks them in order found; A is down, so B is pinned.
        let unpinned = try await daemon.result("unpin")
        #expect(unpinned["response"]?["forgotten"]?["name"] == .string(firstName))
        _ = await watch.notice("Pinned \(secondName)")
        let pin = try Self.pinFile(daemon)
        #expect(pin.url == "http://\(avahi.host):\(second.port)" && pin.how == .discovered)
        #expect(try await second.requests().contains { $0["path"] == "/v1/models" && $0["tokenOk"] == true })
        await firstAd.stop()
        await secondAd.stop()
        await thirdAd.stop()
        #expect(await daemon.stop() == 0)
    }

    @Test("avahi-daemon stopped and started: status bonjour goes unavailable then ok, and the pinned server still answers")
    func avahiRestart() async throws {
        let avahi = try RealAvahi()
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config, token: server.token)
        let watch = try await Watcher.start(daemon)
        #expect(try await daemon.ctl("use", server.url).status == 0)
        _ = await watch.server { $0["reachable"] == true }
        #expect(try await daemon.result("status")["response"]?["bonjour"] == "ok")

        try await avahi.ctl("stop")
        _ = await watch.client.next { $0["event"] == "notice" && $0["bonjour"] == "unavailable" }
        #expect(try await daemon.result("status")["response"]?["bonjour"] == "unavailable")
        let asked = try await daemon.result("ask", "still there?")
        #expect(asked["status"] == "completed")

        try await avahi.ctl("start")
        _ = await watch.client.next { $0["event"] == "notice" && $0["bonjour"] == "ok" }
        let status = try await daemon.result("status")["response"]
        #expect(status?["bonjour"] == "ok")
        #expect(status?["state"] == "idle")
        #expect(status?["server"]?["how"] == "manual")
        #expect(await daemon.stop() == 0)
    }
}
