// Pairing, `use` and the token commands, from the outside: a real daemon, the
// test server and parlourctl. Easy to get wrong here: a refused pairing must
// change nothing at all, the token must never leak outside <state>/token, and
// a kill -9 in the middle of a write must leave whole files.
import Foundation
import Testing
import SatelliteCore

@Suite("pairing and the token", .serialized, .timeLimit(.minutes(3)))
struct PairingTests {
    static let config: JSONValue = ["name": "study-pi", "server": ["retryMs": 2000]]

    static func link(_ url: String, token: String, name: String? = nil) -> String {
        func encode(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text }
        return "parlour://pair?url=\(encode(url))&token=\(encode(token))" + (name.map { "&name=\(encode($0))" } ?? "")
    }

    static func file(_ daemon: DaemonHarness, _ name: String) -> String? {
        try? String(contentsOfFile: daemon.stateDirectory + "/" + name, encoding: .utf8)
    }

    static func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
    }

    @Test("a valid link with --yes checks the server, stores the token 0600 and pins it as paired")
    func pairs() async throws {
        let server = try await TestServer.start(token: "tok+\(UUID().uuidString)")
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config)
        let done = try await daemon.ctl("pair", "--yes", Self.link(server.url, token: server.token, name: "Parlour on den"))
        #expect(done.status == 0, "\(done.err)")
        #expect(done.out.contains("Paired with Parlour on den at \(server.url)"))

        #expect(Self.file(daemon, "token") == server.token + "\n")
        #expect(try Self.mode(daemon.stateDirectory + "/token") == 0o600)
        let pinText = try #require(Self.file(daemon, "pin.json"))
        let pin = try Pin.decode(Array(pinText.utf8), file: "pin.json")
        #expect(pin.url == server.url && pin.name == "Parlour on den" && pin.how == .paired)
        let paths = try await server.requests().map { $0["path"]?.stringValue ?? "" }
        #expect(Array(paths.prefix(2)) == ["/health", "/v1/models"])

        let status = try await daemon.result("status")["response"]
        #expect(status?["server"]?["how"] == "paired")
        #expect(status?["server"]?["name"] == "Parlour on den")
        #expect(try await daemon.result("ask", "hello")["status"] == "completed")
        #expect(await daemon.stop() == 0)
    }

    @Test("pair - reads the link from standard input")
    func pairsFromInput() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config)
        let done = try await daemon.ctl("pair", "--yes", "-", input: Self.link(server.url, token: server.token) + "\n")
        #expect(done.status == 0, "\(done.err)")
        #expect(Self.file(daemon, "token") == server.token + "\n")
        // No name in the link: the url's host stands for it.
        #expect(try await daemon.result("status")["response"]?["server"]?["name"] == "127.0.0.1")
        await daemon.stop()
    }

    @Test("a failed check changes nothing and says which check failed", arguments: ["token", "health"])
    func failedCheck(which: String) async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config, token: server.token)
        #expect(try await daemon.ctl("use", server.url).status == 0)
        let pinBefore = Self.file(daemon, "pin.json")

        let link = which == "token"
            ? Self.link(server.url, token: "wrong-token-1234")
            : Self.link("http://127.0.0.1:1", token: "other-token-5678")
        let result = try await daemon.result("pair", "--yes", link)
        #expect(result["status"] == "error")
        let message = result["message"]?.stringValue ?? ""
        if which == "token" {
            #expect(result["error"] == "token_refused")
            #expect(message.contains("/v1/models refused the token"))
        } else {
            #expect(result["error"] == "server_unreachable")
            #expect(message.contains("The check of /health at http://127.0.0.1:1 failed"))
        }
        #expect(message.contains("nothing was changed"))
        #expect(Self.file(daemon, "token") == server.token + "\n")
        #expect(Self.file(daemon, "pin.json") == pinBefore)
        await daemon.stop()
    }

    @Test("a pairing whose pin.json cannot be saved puts the old token back: the server still pinned never gets the new one")
    func pinNotSaved() async throws {
        let home = try await TestServer.start(token: "home-\(UUID().uuidString)", knobs: ["recordCredentials": true])
        defer { home.stop() }
        let other = try await TestServer.start(token: "other-\(UUID().uuidString)")
        defer { other.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config)
        #expect(try await daemon.ctl("pair", "--yes", Self.link(home.url, token: home.token)).status == 0)
        // A folder where pin.json goes: the token file is written, then pin.json's rename fails.
        let pinFile = daemon.stateDirectory + "/pin.json"
        try FileManager.default.removeItem(atPath: pinFile)
        try FileManager.default.createDirectory(atPath: pinFile + "/in-the-way", withIntermediateDirectories: true)

        let result = try await daemon.result("pair", "--yes", Self.link(other.url, token: other.token))
        #expect(result["status"] == "error", "\(result)")
        #expect(result["message"]?.stringValue?.contains("The pinned server could not be saved") == true, "\(result)")
        #expect(Self.file(daemon, "token") == home.token + "\n", "the token before the pairing is back")
        #expect(try await daemon.result("status")["response"]?["server"]?["url"] == .string(home.url))
        #expect(try await daemon.result("ask", "still home?")["status"] == "completed")
        let shown = try await home.requests().map { $0["shownCredential"]?.stringValue }
        #expect(!shown.contains(other.token), "requests that carried the new token to the server still pinned: \(shown)")
        try FileManager.default.removeItem(atPath: pinFile)
        await daemon.stop()
    }

    @Test("refused links, a missing terminal and server.url in the config change nothing and contact nobody")
    func refusals() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config)
        let link = Self.link(server.url, token: server.token, name: "Parlour on den")

        let noTerminal = try await daemon.ctl("pair", link)
        #expect(noTerminal.status == 1)
        #expect(noTerminal.err.contains("Parlour on den at \(server.url)"))
        #expect(noTerminal.err.contains("--yes"))

        let bad = try await daemon.result("pair", "--yes", "parlour://pair?url=ftp%3A%2F%2Fden&token=abc")
        #expect(bad["error"] == "invalid_link")
        // The daemon parses again: a client that skips parlourctl's check is refused as well.
        let client = try SocketClient(path: daemon.socket)
        client.request(.pair(link: "parlour://pair?token=abc"), id: "raw")
        let raw = await client.result("raw")
        #expect(raw?["error"] == "invalid_link")
        #expect(raw?["message"]?.stringValue?.contains("no server address") == true)

        #expect(try await server.requests().isEmpty)
        #expect(Self.file(daemon, "token") == nil && Self.file(daemon, "pin.json") == nil)
        await daemon.stop()

        let configured = try await DaemonHarness.start(config: ["server": ["url": .string(server.url)]], token: server.token)
        for arguments in [["pair", "--yes", link], ["use", server.url], ["unpin"]] {
            let done = try await Subprocess.run(Package.binDirectory + "/parlourctl", ["--json"] + arguments,
                                                environment: configured.environment)
            let result = try JSONValue.parse(done.out)
            #expect(result["error"] == "invalid_request")
            #expect(result["message"]?.stringValue?.contains("the config decides the server") == true)
        }
        #expect(try await configured.result("status")["response"]?["server"]?["how"] == "configured")
        await configured.stop()
    }

    @Test("use pins by hand; token set reads standard input only, token clear removes it; the token leaks nowhere")
    func useAndToken() async throws {
        let server = try await TestServer.start(token: "secret-\(UUID().uuidString)")
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config)

        #expect(try await daemon.ctl("token", "set", server.token).status == 2)
        #expect(Self.file(daemon, "token") == nil)
        let set = try await daemon.ctl("token", "set", input: server.token + "\n")
        #expect(set.status == 0, "\(set.err)")
        #expect(Self.file(daemon, "token") == server.token + "\n")
        #expect(try Self.mode(daemon.stateDirectory + "/token") == 0o600)

        let watch = try await Watcher.start(daemon)
        let used = try await daemon.result("use", server.url)
        #expect(used["response"]?["server"]?["how"] == "manual")
        let pin = try Pin.decode(Array((Self.file(daemon, "pin.json") ?? "").utf8), file: "pin.json")
        #expect(pin.how == .manual && pin.url == server.url)

        _ = await watch.server { $0["tokenAccepted"] == true }

        // Everything the daemon shows or keeps, except the token file itself.
        let status = try await daemon.ctl("--json", "status")
        let servers = try await daemon.ctl("--json", "servers")
        var shown = [daemon.stderr, status.out, servers.out, set.out, set.err]
        let files = try FileManager.default.contentsOfDirectory(atPath: daemon.stateDirectory).filter { $0 != "token" }
        #expect(files == ["pin.json"])
        shown += files.compactMap { Self.file(daemon, $0) }
        for text in shown { #expect(!text.contains(server.token)) }

        let cleared = try await daemon.ctl("token", "clear")
        #expect(cleared.out.contains("The token is removed"))
        #expect(Self.file(daemon, "token") == nil)
        #expect(await daemon.stop() == 0)
        #expect(!daemon.stderr.contains(server.token))
    }

    @Test("kill -9 while pairing, again and again, leaves a pin.json that parses and one whole token")
    func killWhilePairing() async throws {
        let first = try await TestServer.start(token: "first-\(UUID().uuidString)")
        defer { first.stop() }
        let second = try await TestServer.start(token: "second-\(UUID().uuidString)")
        defer { second.stop() }
        let links = [Self.link(first.url, token: first.token), Self.link(second.url, token: second.token)]
        var daemon = try await DaemonHarness.start(config: Self.config)
        var completed = 0, leftovers = 0
        // The files are written at the very end of a pairing: kills are spread around how long a
        // whole one takes, so that some land during the writes.
        let clock = ContinuousClock()
        let start = clock.now
        _ = try await daemon.ctl("pair", "--yes", links[1])
        let whole = Int((clock.now - start) / .microseconds(1))
        for round in 0..<30 {
            let environment = daemon.environment
            let pairing = Task {
                try await Subprocess.run(Package.binDirectory + "/parlourctl", ["pair", "--yes", links[round % 2]],
                                         environment: environment)
            }
            // The delay is the point of the test, not a wait for something: kill at a random moment.
            try await Task.sleep(for: .microseconds(Int.random(in: whole / 2...whole)))
            await daemon.kill9()
            if try await pairing.value.status == 0 { completed += 1 }

            if let pin = try? FileSystem.read(daemon.stateDirectory + "/pin.json") {
                let decoded = try Pin.decode(pin, file: "pin.json")
                #expect([first.url, second.url].contains(decoded.url))
            }
            if let token = Self.file(daemon, "token") {
                #expect([first.token + "\n", second.token + "\n"].contains(token))
            }
            let before = try FileManager.default.contentsOfDirectory(atPath: daemon.stateDirectory)
            if before.contains(where: { $0.hasSuffix(".tmp") }) { leftovers += 1 }
            daemon = try await daemon.restart()
            // A killed writer's temporary is gone once the daemon is back.
            let files = try FileManager.default.contentsOfDirectory(atPath: daemon.stateDirectory)
            #expect(files.allSatisfy { ["token", "pin.json"].contains($0) }, "\(files)")
        }
        #expect(await daemon.stop() == 0)
        print("kill -9 while pairing: \(completed) of 30 completed before the kill; \(leftovers) kills left a temporary behind")
    }
}
