// A server and its token together, tried as a hostile network or a careless
// hand would: a credential token beside a paired link, `use` to another
// server that records every credential it is shown, a token that is not a
// bearer token, a URL with a password. The recording server plays the hostile
// part (the test server's recordCredentials knob); each test counts the
// requests that carried the house's token to the wrong place, which must be 0.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("the token goes to its own server alone", .serialized, .timeLimit(.minutes(3)))
struct TokenTrustTests {
    static let config: JSONValue = ["name": "hall-pi", "server": ["retryMs": 2000]]

    static func link(_ server: TestServer, name: String = "Parlour on den") -> String {
        func encoded(_ text: String) -> String { ListenURL.percentEncoded(text) }
        return "parlour://pair?url=\(encoded(server.url))&token=\(encoded(server.token))&name=\(encoded(name))"
    }

    static func file(_ daemon: DaemonHarness, _ name: String) -> String? {
        try? String(contentsOfFile: daemon.stateDirectory + "/" + name, encoding: .utf8)
    }

    /// Every credential `server` was shown, in order (nil for a request that carried none).
    static func shown(_ server: TestServer) async throws -> [String?] {
        try await server.requests().map { $0["shownCredential"]?.stringValue }
    }

    /// Everything the daemon shows or keeps, but the token file: its log, these outputs, its other state files.
    static func everythingShown(_ daemon: DaemonHarness, _ outputs: [Finished]) throws -> [String] {
        var shown = [daemon.stderr] + outputs.flatMap { [$0.out, $0.err] }
        let files = try FileManager.default.contentsOfDirectory(atPath: daemon.stateDirectory).filter { $0 != "token" }
        shown += files.compactMap { file(daemon, $0) }
        return shown
    }

    @Test("with systemd's credential beside a paired link, the link's server gets the link's token and never the credential's")
    func credentialStaysHome() async throws {
        let credentialToken = "house-\(UUID().uuidString)"
        let credentials = try Package.temporaryDirectory("cred")
        try (credentialToken + "\n").write(to: credentials.appendingPathComponent("token"), atomically: true, encoding: .utf8)
        let paired = try await TestServer.start(token: "link-\(UUID().uuidString)", knobs: ["recordCredentials": true])
        defer { paired.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config, mic: Speech.silence(1),
                                                   environment: ["CREDENTIALS_DIRECTORY": credentials.path])
        let pairing = Self.link(paired)
        let done = try await daemon.ctl("pair", "--yes", "-", input: pairing + "\n")
        #expect(done.status == 0, "\(done.err)")
        let asked = try await daemon.result("ask", "what time is it")
        #expect(asked["status"] == "completed", "\(asked)")
        let status = try await daemon.ctl("status")
        #expect(status.out.contains("Token:      the one in the state folder, sent to this server alone"), "\(status.out)")
        let json = try await daemon.result("status")
        #expect(json["response"]?["server"]?["tokenSource"] == "state")
        let doctor = try await daemon.ctl("--json", "doctor")

        let shown = try await Self.shown(paired)
        #expect(shown.contains(paired.token), "the link's token went to the link's server")
        let wrong = shown.filter { $0 == credentialToken }.count
        #expect(wrong == 0, "requests that carried the credential's token to the link's server: \(wrong)")
        let pin = try Pin.decode(Array((Self.file(daemon, "pin.json") ?? "").utf8), file: "pin.json")
        #expect(pin.how == .paired && pin.tokenSource == .state)
        for text in try Self.everythingShown(daemon, [done, status, doctor]) {
            #expect(!text.contains(paired.token) && !text.contains(credentialToken) && !text.contains(pairing))
        }
        #expect(await daemon.stop() == 0)
    }

    @Test("use to another server checks /health alone and leaves the token behind, until token set gives it its own")
    func useLeavesTheToken() async throws {
        let home = try await TestServer.start(knobs: ["recordCredentials": true])
        defer { home.stop() }
        let other = try await TestServer.start(token: "other-\(UUID().uuidString)", knobs: ["recordCredentials": true])
        defer { other.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config, token: home.token, mic: Speech.silence(1))
        let first = try await daemon.ctl("use", home.url)
        #expect(first.status == 0, "\(first.err)")
        #expect(first.out.contains("Only this server gets a request or its token."))
        #expect(try await daemon.result("ask", "hello")["status"] == "completed")

        // Moved to another origin: only /health there, with no credential, and no token from then on.
        let moved = try await daemon.ctl("use", other.url)
        #expect(moved.status == 0, "\(moved.err)")
        #expect(moved.out.contains("The token stayed behind"), "\(moved.out)")
        #expect(moved.out.contains("\nAddress: \(other.url)\n"))
        // use asked /health alone; the satellite's own checks that follow carry no credential either.
        #expect(try await other.requests().first?["path"] == "/health")
        let pin = try Pin.decode(Array((Self.file(daemon, "pin.json") ?? "").utf8), file: "pin.json")
        #expect(pin.url == other.url && pin.tokenSource == nil)
        let refused = try await daemon.result("ask", "hello again")
        #expect(refused["error"] == "not_paired", "the server asks for a token and this one has none: \(refused)")
        let status = try await daemon.ctl("status")
        #expect(status.out.contains("Token:      none goes to this server"), "\(status.out)")
        let doctor = try await daemon.result("doctor")
        let check = doctor["response"]?["checks"]?.arrayValue?.first { $0["name"] == "token" }
        #expect(check?["status"] == "fail", "\(String(describing: check))")

        let before = try await Self.shown(other)
        let leaked = before.filter { $0 == home.token }.count
        #expect(leaked == 0, "requests that carried the house's token to the other server: \(leaked)")
        #expect(before.allSatisfy { $0 == nil }, "the other server was shown no credential at all: \(before)")

        // token set gives the server in use its own token; the house's token is never sent there.
        let set = try await daemon.ctl("token", "set", input: other.token + "\n")
        #expect(set.status == 0, "\(set.err)")
        #expect(try await daemon.result("ask", "and now?")["status"] == "completed")
        let after = try await Self.shown(other)
        #expect(after.contains(other.token) && !after.contains(home.token))
        #expect(try Pin.decode(Array((Self.file(daemon, "pin.json") ?? "").utf8), file: "pin.json").tokenSource == .state)
        for text in try Self.everythingShown(daemon, [first, moved, status, set]) {
            #expect(!text.contains(home.token) && !text.contains(other.token))
        }
        #expect(await daemon.stop() == 0)
    }

    @Test("a token that is not a bearer token is an error naming its place, and nothing is sent with it")
    func notABearerToken() async throws {
        let server = try await TestServer.start(knobs: ["recordCredentials": true])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config, mic: Speech.silence(1),
                                                   environment: ["PARLOUR_TOKEN": "abc\r\nX-Injected: yes"])
        let used = try await daemon.ctl("use", server.url)
        #expect(used.status == 1)
        #expect(used.err.contains("$PARLOUR_TOKEN") && used.err.contains("line break"), "\(used.err)")
        #expect(!used.err.contains("X-Injected"))
        #expect(try await server.requests().isEmpty, "nothing was sent")

        // token set and a pairing link are held to the same character set.
        let set = try await daemon.ctl("token", "set", input: "two words\n")
        #expect(set.status == 1 && set.err.contains("space"), "\(set.err)")
        #expect(Self.file(daemon, "token") == nil)
        let badLink = "parlour://pair?url=\(ListenURL.percentEncoded(server.url))&token=abc%0D%0AHost%3A%20evil"
        let paired = try await daemon.ctl("pair", "--yes", "-", input: badLink + "\n")
        #expect(paired.status == 1 && paired.err.contains("the pairing link"), "\(paired.err)")
        #expect(try await server.requests().isEmpty, "nothing was sent")
        #expect(!daemon.stderr.contains("X-Injected") && !daemon.stderr.contains("evil"))
        #expect(await daemon.stop() == 0)
    }

    @Test("a URL with a user or password is refused by use and by links, and the password appears nowhere")
    func passwordInURL() async throws {
        let server = try await TestServer.start(knobs: ["recordCredentials": true])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config, token: server.token, mic: Speech.silence(1))
        let password = "hunter2-\(UUID().uuidString.prefix(6))"
        let withPassword = server.url.replacing("http://", with: "http://me:\(password)@")
        let used = try await daemon.ctl("use", withPassword)
        #expect(used.status == 1 && used.err.contains("user name or password"), "\(used.err)")
        let link = "parlour://pair?url=\(ListenURL.percentEncoded(withPassword))&token=\(server.token)"
        let paired = try await daemon.ctl("pair", "--yes", link)
        #expect(paired.status == 1 && paired.err.contains("user name or password"), "\(paired.err)")
        #expect(paired.err.contains("shell's history"), "pair LINK on the command line says where the link now is")
        #expect(try await server.requests().isEmpty)
        #expect(Self.file(daemon, "pin.json") == nil)
        for text in try Self.everythingShown(daemon, [used, paired]) { #expect(!text.contains(password)) }
        #expect(await daemon.stop() == 0)
    }

    @Test("pair's question shows a link's name escaped and the address alone on its line")
    func escapedQuestion() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: Self.config, mic: Speech.silence(1))
        let forged = "den\nAddress: http://10.0.0.1:8765\u{1B}[1A"
        let session = try await PseudoTerminal.parlourctl(["pair", "-"], steps: [
            .send(Self.link(server, name: forged) + "\n\u{04}"),
            .expect("[y/N] "), .send("n\n"),
            .expect("Not paired"),
        ], environment: daemon.environment)
        #expect(session.error == nil, "\(session.error ?? "")\n\(session.transcript)")
        #expect(session.transcript.contains("Pair with den\\u{A}Address: http://10.0.0.1:8765\\u{1B}[1A?"), "\(session.transcript)")
        #expect(session.transcript.contains("Address: \(server.url)\r\n") || session.transcript.contains("Address: \(server.url)\n"))
        #expect(!session.transcript.contains("\u{1B}[1A"))
        #expect(Self.file(daemon, "pin.json") == nil)
        #expect(await daemon.stop() == 0)
    }
}
