// A pinned server's name moving to another address, with the real avahi-daemon of
// scripts/netns-run. The pinned server, house.local at 198.51.100.2, goes away;
// first house.local is answered from 198.51.100.3 by a hostile server with the
// house's token that logs every credential it is shown: the satellite keeps to
// the pinned address and sends it nothing. Then the server's own Bonjour instance
// announces it at 198.51.100.4: with server.followMoves it is followed (the
// journal names both addresses), without it a person must decide. A server in
// server.url is held to the same: on plain http only the instance that announced
// it where it first answered moves it, never its name nor another instance.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("a pinned server is reached where it was pinned", .serialized, .timeLimit(.minutes(2)))
struct PinMoveTests {
    static let host = "house.local"

    static func pinFile(_ daemon: DaemonHarness) throws -> Pin {
        let file = daemon.stateDirectory + "/pin.json"
        return try Pin.decode(try FileSystem.read(file), file: file)
    }

    static func addAddress(_ address: String) async throws {
        let done = try await Subprocess.run("/usr/sbin/ip", ["addr", "add", address + "/32", "dev", "lo"])
        guard done.status == 0 || done.err.contains("File exists") || done.err.contains("already assigned") else { throw TestFailure("ip addr add \(address): \(done.err)") }
    }

    static let extra = ["198.51.100.2", "198.51.100.3", "198.51.100.4"]

    static func removeAddress(_ address: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["addr", "del", address + "/32", "dev", "lo"]
        try? process.run()
        TestChildren.tie(process)
        process.waitUntilExit()
    }

    /// A daemon whose server.url names `host`, which stands for 198.51.100.2, where the first server answers.
    static func startConfigured(host: String, followMoves: Bool? = nil, tls: TestCertificate? = nil,
                                environment: [String: String] = [:]) async throws
        -> (token: String, first: TestServer, hostAd: AvahiPublisher, daemon: DaemonHarness) {
        let token = "tok-\(UUID().uuidString)"
        let first = try await TestServer.start(token: token, host: "198.51.100.2", tls: tls)
        let hostAd = try await AvahiPublisher.address(host: host, "198.51.100.2")
        var server: [String: JSONValue] = ["url": .string("\(tls == nil ? "http" : "https")://\(host):\(first.port)"), "retryMs": 1000]
        if let followMoves { server["followMoves"] = .bool(followMoves) }
        let config: JSONValue = ["name": "hall-pi", "transport": "record", "server": .object(server),
                                 "audio": ["input": "testmic", "output": "testspeaker"]]
        let daemon = try await DaemonHarness.start(config: config, token: token, environment: environment)
        return (token, first, hostAd, daemon)
    }

    func moves(followMoves: Bool) async throws {
        _ = try RealAvahi()
        for address in Self.extra { try await Self.addAddress(address) }
        // On lo, not d0: avahi-daemon would announce den.local at every address of d0, and other suites expect one.
        defer { for address in Self.extra { Self.removeAddress(address) } }
        let token = "tok-\(UUID().uuidString)"
        let first = try await TestServer.start(token: token, host: "198.51.100.2")
        let port = first.port
        let name = "Parlour on house \(UUID().uuidString.prefix(6))"
        var hostAd = try await AvahiPublisher.address(host: Self.host, "198.51.100.2")
        var serviceAd = try await AvahiPublisher.start(name: name, port: port, txt: ["role=server"], host: Self.host)
        let config: JSONValue = ["name": "hall-pi", "transport": "record",
                                 "server": ["retryMs": 1000, "followMoves": .bool(followMoves)],
                                 "audio": ["input": "testmic", "output": "testspeaker"]]
        let daemon = try await DaemonHarness.start(config: config, token: token)
        let watch = try await Watcher.start(daemon)
        _ = await watch.notice("Pinned \(name)")
        let pinned = try Self.pinFile(daemon)
        #expect(pinned.url == "http://\(Self.host):\(port)")
        #expect(pinned.addresses == ["198.51.100.2"] && pinned.instance == name)

        // The server goes; its name is answered elsewhere, with no Bonjour instance saying so.
        await serviceAd.stop()
        await first.shutdown()
        await hostAd.stop()
        let hostile = try await TestServer.start(token: token, host: "198.51.100.3", port: port)
        defer { hostile.stop() }
        hostAd = try await AvahiPublisher.address(host: Self.host, "198.51.100.3")
        let asked = try await daemon.result("ask", "is anyone there")
        #expect(asked["error"] == "server_unreachable", "\(asked)")
        _ = await watch.server { $0["reachable"] == false }
        #expect(try Self.pinFile(daemon).addresses == ["198.51.100.2"])

        // Its own instance announces it at a new address while the old one is silent.
        await hostAd.stop()
        let moved = try await TestServer.start(token: token, host: "198.51.100.4", port: port)
        defer { moved.stop() }
        hostAd = try await AvahiPublisher.address(host: Self.host, "198.51.100.4")
        serviceAd = try await AvahiPublisher.start(name: name, port: port, txt: ["role=server"], host: Self.host)
        if followMoves {
            let notice = await watch.notice("no longer answers at 198.51.100.2", "announces it at 198.51.100.4", "following it there")
            #expect(notice?["from_addresses"] == "198.51.100.2" && notice?["to_addresses"] == "198.51.100.4")
            #expect(try Self.pinFile(daemon).addresses == ["198.51.100.4"])
            let answered = try await daemon.result("ask", "are you back")
            #expect(answered["status"] == "completed", "\(answered)")
            let got = try await moved.requests()
            #expect(got.contains { $0["path"] == "/ask" && $0["tokenOk"] == true }, "\(got)")
        } else {
            let notice = await watch.notice("announces it at 198.51.100.4", "It was not followed (server.followMoves is false)")
            #expect(notice != nil)
            #expect(try Self.pinFile(daemon).addresses == ["198.51.100.2"])
            #expect(try await daemon.result("ask", "are you back")["error"] == "server_unreachable")
            // Other suites' daemons in the same namespace may check it with their own tokens; the house's never reaches it.
            #expect(try await moved.requests().allSatisfy { $0["tokenOk"] == false })
        }
        #expect(await daemon.stop() == 0)
        let seen = try await hostile.requests().filter { $0["tokenOk"] != false }
        #expect(seen.isEmpty, "the server the name moved to was sent the house's token: \(seen)")
        print("FIGURE move followMoves=\(followMoves) addressesMoved=2 tokenToWrongPlace=\(seen.count)")
        await serviceAd.stop()
        await hostAd.stop()
    }

    @Test("a server configured by a name is reached where the name first stood: answered elsewhere later, even after a restart, it gets no token")
    func configuredByName() async throws {
        _ = try RealAvahi()
        let host = "conf-\(UUID().uuidString.prefix(6).lowercased()).local"
        for address in Self.extra { try await Self.addAddress(address) }
        defer { for address in Self.extra { Self.removeAddress(address) } }
        let (token, first, firstAd, daemon) = try await Self.startConfigured(host: host)
        let port = first.port
        var hostAd = firstAd
        let answered = try await daemon.result("ask", "is the house there")
        #expect(answered["status"] == "completed", "\(answered)")

        // The server goes; its name is answered elsewhere by a server that logs every token it is shown.
        await first.shutdown()
        await hostAd.stop()
        let hostile = try await TestServer.start(token: token, host: "198.51.100.3", port: port)
        defer { hostile.stop() }
        hostAd = try await AvahiPublisher.address(host: host, "198.51.100.3")
        let asked = try await daemon.result("ask", "is anyone there")
        #expect(asked["error"] == "server_unreachable", "\(asked)")
        #expect(await daemon.stop() == 0)
        // Nor after a restart: the addresses the name first stood for are kept in the state folder.
        let again = try await daemon.restart()
        let askedAgain = try await again.result("ask", "is anyone there now")
        #expect(askedAgain["error"] == "server_unreachable", "\(askedAgain)")
        #expect(await again.stop() == 0)
        let seen = try await hostile.requests().filter { $0["tokenOk"] != false }
        #expect(seen.isEmpty, "the server the configured name moved to was sent the house's token: \(seen)")
        await hostAd.stop()
    }

    @Test("a configured http name that resolves elsewhere while the kept address is silent is not followed, whatever server.followMoves says: the journal and doctor say what to run", arguments: [true, false])
    func configuredMoveWaits(followMoves: Bool) async throws {
        _ = try RealAvahi()
        let host = "move-\(UUID().uuidString.prefix(6).lowercased()).local"
        for address in Self.extra { try await Self.addAddress(address) }
        defer { for address in Self.extra { Self.removeAddress(address) } }
        let (token, first, firstAd, daemon) = try await Self.startConfigured(host: host, followMoves: followMoves)
        let port = first.port
        var hostAd = firstAd
        let watch = try await Watcher.start(daemon)
        #expect(try await daemon.result("ask", "is the house there")["status"] == "completed")

        await first.shutdown()
        await hostAd.stop()
        let other = try await TestServer.start(token: token, host: "198.51.100.3", port: port)
        defer { other.stop() }
        hostAd = try await AvahiPublisher.address(host: host, "198.51.100.3")
        // An instance that never announced the server where it answered says it is there now: it proves nothing either.
        let newcomer = try await AvahiPublisher.start(name: "Parlour newcomer \(UUID().uuidString.prefix(6))", port: port,
                                                      txt: ["role=server"], host: host)
        // A request finds the kept address silent; the name is looked up again on the next retry.
        #expect(try await daemon.result("ask", "is anyone there")["error"] == "server_unreachable")
        let why = followMoves
            ? "on plain http a name that resolves elsewhere proves nothing, and no Bonjour instance announced this server where it answered"
            : "server.followMoves is false"
        let notice = await watch.notice("no longer answers at 198.51.100.2", "its name now resolves to it at 198.51.100.3",
                                        "It was not followed (\(why))", "configured.json")
        #expect(notice?["from_addresses"] == "198.51.100.2" && notice?["to_addresses"] == "198.51.100.3", "\(String(describing: notice))")
        let doctor = try await daemon.result("doctor")
        let check = doctor["response"]?["checks"]?.arrayValue?.first { $0["name"] == "server_pinned" }
        #expect(check?["status"] == "fail" && check?["detail"]?.stringValue?.contains("It was not followed") == true, "\(String(describing: check))")
        #expect(check?["fix"]?.stringValue?.hasPrefix("rm \(daemon.stateDirectory)/configured.json && sudo systemctl restart") == true,
                "\(String(describing: check))")
        #expect(try await daemon.result("ask", "is anyone there")["error"] == "server_unreachable")
        #expect(await daemon.stop() == 0)
        let seen = try await other.requests().filter { $0["tokenOk"] != false }
        #expect(seen.isEmpty, "the server the configured name moved to was sent the house's token: \(seen)")
        #expect(try JSONValue.parse(try FileSystem.read(daemon.stateDirectory + "/configured.json"))["instance"] == nil)
        await newcomer.stop()
        await hostAd.stop()
    }

    /// A daemon whose server.url names a plain http host announced by its own Bonjour instance,
    /// recorded once the server has answered there; the server then goes, with its instance,
    /// and the daemon is started again, so that the instance is known from configured.json alone.
    static func startAnnounced(followMoves: Bool)
        async throws -> (token: String, port: Int, host: String, instance: String, daemon: DaemonHarness) {
        let host = "ann-\(UUID().uuidString.prefix(6).lowercased()).local"
        let (token, first, firstAd, daemon) = try await Self.startConfigured(host: host, followMoves: followMoves)
        let port = first.port
        let instance = "Parlour on \(host) \(UUID().uuidString.prefix(6))"
        let watch = try await Watcher.start(daemon)
        #expect(try await daemon.result("ask", "is the house there")["status"] == "completed")
        let serviceAd = try await AvahiPublisher.start(name: instance, port: port, txt: ["role=server"], host: host)
        let recorded = await watch.notice("is announced by the Bonjour instance \"\(instance)\"")
        #expect(recorded?["instance"]?.stringValue == instance, "\(String(describing: recorded))")
        let kept = try JSONValue.parse(try FileSystem.read(daemon.stateDirectory + "/configured.json"))
        #expect(kept["instance"]?.stringValue == instance && kept["addresses"] == ["198.51.100.2"], "\(kept)")
        #expect(await daemon.stop() == 0)
        await serviceAd.stop()
        await first.shutdown()
        await firstAd.stop()
        let again = try await daemon.restart()
        #expect(try await again.result("ask", "is anyone there")["error"] == "server_unreachable")
        return (token, port, host, instance, again)
    }

    @Test("a configured http server whose own Bonjour instance announces it at a new address is followed there with server.followMoves, and waits without it", arguments: [true, false])
    func configuredInstanceMoves(followMoves: Bool) async throws {
        _ = try RealAvahi()
        for address in Self.extra { try await Self.addAddress(address) }
        defer { for address in Self.extra { Self.removeAddress(address) } }
        let (token, port, host, instance, daemon) = try await Self.startAnnounced(followMoves: followMoves)
        let watch = try await Watcher.start(daemon)

        let moved = try await TestServer.start(token: token, host: "198.51.100.4", port: port)
        defer { moved.stop() }
        let hostAd = try await AvahiPublisher.address(host: host, "198.51.100.4")
        let serviceAd = try await AvahiPublisher.start(name: instance, port: port, txt: ["role=server"], host: host)
        if followMoves {
            let notice = await watch.notice("no longer answers at 198.51.100.2", "its own Bonjour instance announces it at 198.51.100.4",
                                            "following it there")
            #expect(notice?["from_addresses"] == "198.51.100.2" && notice?["to_addresses"] == "198.51.100.4", "\(String(describing: notice))")
            let kept = try JSONValue.parse(try FileSystem.read(daemon.stateDirectory + "/configured.json"))
            #expect(kept["addresses"] == ["198.51.100.4"] && kept["instance"]?.stringValue == instance, "\(kept)")
            let answered = try await daemon.result("ask", "are you back")
            #expect(answered["status"] == "completed", "\(answered)")
            let got = try await moved.requests()
            #expect(got.contains { $0["path"] == "/ask" && $0["tokenOk"] == true }, "\(got)")
        } else {
            let notice = await watch.notice("its own Bonjour instance announces it at 198.51.100.4",
                                            "It was not followed (server.followMoves is false)", "configured.json")
            #expect(notice != nil)
            let doctor = try await daemon.result("doctor")
            let check = doctor["response"]?["checks"]?.arrayValue?.first { $0["name"] == "server_pinned" }
            #expect(check?["status"] == "fail" && check?["detail"]?.stringValue?.contains("announces it at 198.51.100.4") == true,
                    "\(String(describing: check))")
            #expect(check?["fix"]?.stringValue?.hasPrefix("rm \(daemon.stateDirectory)/configured.json && sudo systemctl restart") == true,
                    "\(String(describing: check))")
            let kept = try JSONValue.parse(try FileSystem.read(daemon.stateDirectory + "/configured.json"))
            #expect(kept["addresses"] == ["198.51.100.2"], "\(kept)")
            #expect(try await daemon.result("ask", "are you back")["error"] == "server_unreachable")
            // Other suites' daemons in the same namespace may check it with their own tokens; the house's never reaches it.
            #expect(try await moved.requests().allSatisfy { $0["tokenOk"] == false })
        }
        #expect(await daemon.stop() == 0)
        await serviceAd.stop()
        await hostAd.stop()
    }

    @Test("a configured http server announced elsewhere by another Bonjour instance than its own is not followed, and that place gets no token")
    func configuredOtherInstanceWaits() async throws {
        _ = try RealAvahi()
        for address in Self.extra { try await Self.addAddress(address) }
        defer { for address in Self.extra { Self.removeAddress(address) } }
        let (token, port, host, instance, daemon) = try await Self.startAnnounced(followMoves: true)
        let watch = try await Watcher.start(daemon)

        let hostile = try await TestServer.start(token: token, host: "198.51.100.3", port: port)
        defer { hostile.stop() }
        let hostAd = try await AvahiPublisher.address(host: host, "198.51.100.3")
        let impostor = try await AvahiPublisher.start(name: "Parlour impostor \(UUID().uuidString.prefix(6))", port: port,
                                                      txt: ["role=server"], host: host)
        let notice = await watch.notice("its name now resolves to it at 198.51.100.3",
                                        "only its own Bonjour instance \"\(instance)\" announcing it there would")
        #expect(notice?["to_addresses"] == "198.51.100.3", "\(String(describing: notice))")
        #expect(try await daemon.result("ask", "is anyone there")["error"] == "server_unreachable")
        #expect(await daemon.stop() == 0)
        let seen = try await hostile.requests().filter { $0["tokenOk"] != false }
        #expect(seen.isEmpty, "the address another instance announced was sent the house's token: \(seen)")
        await impostor.stop()
        await hostAd.stop()
    }

    @Test("a configured https name is followed where it resolves only once the server there passes the TLS check for it, and only then gets the token")
    func configuredHTTPSFollowed() async throws {
        _ = try RealAvahi()
        let host = "tls-\(UUID().uuidString.prefix(6).lowercased()).local"
        for address in Self.extra { try await Self.addAddress(address) }
        defer { for address in Self.extra { Self.removeAddress(address) } }
        let trusted = try TestCertificate.make(name: host, subjectAltName: "DNS:\(host)")
        let stranger = try TestCertificate.make(name: host, subjectAltName: "DNS:\(host)")
        // The certificate is its own authority: the one a server must show for the name.
        let (token, first, firstAd, daemon) = try await Self.startConfigured(host: host, tls: trusted,
                                                                             environment: ["SSL_CERT_FILE": trusted.certificate])
        let port = first.port
        var hostAd = firstAd
        let watch = try await Watcher.start(daemon)
        #expect(try await daemon.result("ask", "is the house there")["status"] == "completed")

        // The name is answered elsewhere by a server whose certificate is not trusted for it: not followed.
        await first.shutdown()
        await hostAd.stop()
        let hostile = try await TestServer.start(token: token, host: "198.51.100.3", tls: stranger, port: port)
        defer { hostile.stop() }
        hostAd = try await AvahiPublisher.address(host: host, "198.51.100.3")
        #expect(try await daemon.result("ask", "is anyone there")["error"] == "server_unreachable")
        let refused = await watch.notice("its name now resolves to it at 198.51.100.3", "It was not followed (it did not prove itself there")
        #expect(refused != nil)

        // Then at an address where the server shows the certificate trusted for the name: followed.
        await hostAd.stop()
        let moved = try await TestServer.start(token: token, host: "198.51.100.4", tls: trusted, port: port)
        defer { moved.stop() }
        hostAd = try await AvahiPublisher.address(host: host, "198.51.100.4")
        let notice = await watch.notice("no longer answers at 198.51.100.2", "resolves to it at 198.51.100.4", "following it there")
        #expect(notice?["from_addresses"] == "198.51.100.2" && notice?["to_addresses"] == "198.51.100.4", "\(String(describing: notice))")
        let kept = try JSONValue.parse(try FileSystem.read(daemon.stateDirectory + "/configured.json"))
        #expect(kept["addresses"] == ["198.51.100.4"], "\(kept)")
        let answered = try await daemon.result("ask", "are you back")
        #expect(answered["status"] == "completed", "\(answered)")
        let got = try await moved.requests()
        // Proved before the token: /health alone first, the token only after the move.
        #expect(got.first?["path"] == "/health" && got.first?["credential"] == .null, "\(got)")
        #expect(got.contains { $0["path"] == "/ask" && $0["tokenOk"] == true }, "\(got)")
        #expect(await daemon.stop() == 0)
        #expect(try await hostile.requests().isEmpty, "the server that could not prove itself was sent a request")
        await hostAd.stop()
    }

    @Test("a name that resolves elsewhere is not followed; its own instance's announcement is, and the journal names both addresses")
    func followed() async throws { try await moves(followMoves: true) }

    @Test("with server.followMoves false, the announced move waits for a person and nothing goes there")
    func waits() async throws { try await moves(followMoves: false) }
}
