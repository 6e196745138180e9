// The pure checks that keep the token with its server and what the eye is
// shown honest: the bearer token's character set, URLs with a user or
// password, the origin a request would go to, and the escaping of text that
// came from a link, Bonjour or a server.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("trust: tokens, origins and what is shown")
struct TrustTests {
    @Test("bearer tokens are RFC 6750's b64token", arguments: [
        "abc", "A-Z_a.z~0+9/", "dGVzdA==", "x=", "0123456789abcdef0123456789abcdef",
    ])
    func validTokens(token: String) {
        #expect(BearerToken.isValid(token))
        #expect(BearerToken.problem(token, source: "x") == nil)
    }

    @Test("anything else is refused, naming the source and what is wrong, never the token", arguments: [
        ("", "it is empty"), ("abc\r\nX-Evil: 1", "line break"), ("abc\ndef", "line break"), ("ab cd", "space"),
        ("ab\tcd", "space"), ("ab\u{7}cd", "control character"), ("abcé", "outside ASCII"), ("=abc", "starts with ="),
        ("ab=cd", "= only at its end"), ("ab\"cd", "other than letters"), ("ab,cd", "other than letters"),
        ("ab;cd", "other than letters"),
    ])
    func invalidTokens(token: String, why: String) throws {
        #expect(!BearerToken.isValid(token))
        let problem = try #require(BearerToken.problem(token, source: "/run/credentials/x/token (the systemd credential)"))
        #expect(problem.contains("/run/credentials/x/token (the systemd credential)"))
        #expect(problem.contains(why), "\(problem)")
        #expect(problem.contains("Nothing was sent"))
        if token.count > 2 { #expect(!problem.contains(token)) }
    }

    @Test("a pairing link whose token is not a bearer token is refused, without quoting it")
    func linkToken() throws {
        let result = PairingLink.parse("parlour://pair?url=http%3A%2F%2Fden.local%3A8765&token=s3cret%0D%0AHost%3A%20evil")
        guard case .failure(let error) = result else { Issue.record("accepted"); return }
        #expect(error.code == .invalidLink)
        #expect(error.message.contains("the pairing link") && error.message.contains("line break"))
        #expect(!error.message.contains("s3cret") && !error.message.contains("evil"))
    }

    @Test("a URL with a user or password is refused by links, addresses and pins, and never quoted back", arguments: [
        "http://me:hunter2@den.local:8765", "http://me@den.local", "https://:hunter2@den.local", "http://a@b@den.local",
    ])
    func userInfo(url: String) throws {
        #expect(ServerAddress(url) == nil)
        let problem = try #require(ServerAddress.problem(url))
        #expect(problem.contains("user name or password"))
        #expect(!problem.contains("hunter2") && !problem.contains("me@"))
        let link = "parlour://pair?token=abc&url=" + url.replacing(":", with: "%3A").replacing("/", with: "%2F").replacing("@", with: "%40")
        guard case .failure(let error) = PairingLink.parse(link) else { Issue.record("link accepted"); return }
        #expect(error.message.contains("user name or password") && !error.message.contains("hunter2"))
    }

    @Test("the origin is scheme://host:port, always with the port, IPv6 in brackets", arguments: [
        ("http://den.local:8765", "http://den.local:8765"), ("http://den.local", "http://den.local:80"),
        ("HTTPS://Den.Local/x?y", "https://Den.Local:443"), ("http://[fe80::1]:8765/", "http://[fe80::1]:8765"),
    ])
    func origin(url: String, origin: String) throws {
        #expect(try #require(ServerAddress(url)).origin == origin)
    }

    @Test("a host's escapes are undone as the connections undo them, once", arguments: [
        ("http://den%2Elocal:8765", "den.local"), ("http://[fe80::1%25eth0]:8765", "fe80::1%eth0"), ("http://den.local", "den.local"),
    ])
    func escapedHost(url: String, host: String) throws {
        #expect(try #require(ServerAddress(url)).host == host)
        #expect(URLParts(url)?.name == host)
        #expect(ServerAddress("http://den%0D%0Aevil:8765") == nil && ServerAddress("http://den%zz:8765") == nil)
    }

    @Test("the same origin is the same scheme, host and port", arguments: [
        ("http://den.local:8765", "http://DEN.local.:8765/", true), ("http://den.local", "http://den.local:80", true),
        ("http://den.local:8765", "https://den.local:8765", false), ("http://den.local:8765", "http://den.local:8766", false),
        ("http://den.local:8765", "http://attic.local:8765", false), ("https://den.local", "https://den.local:443", true),
        ("http://den%2Elocal:8765", "http://den.local:8765", true),
    ])
    func sameOrigin(a: String, b: String, same: Bool) throws {
        #expect(try #require(ServerAddress(a)).sameOrigin(as: try #require(ServerAddress(b))) == same)
    }

    @Test("control and bidi characters are shown escaped; other text stays as it is", arguments: [
        ("Parlour on den", "Parlour on den"), ("Café – Küche 客厅", "Café – Küche 客厅"),
        ("den\nWarning: forged", "den\\u{A}Warning: forged"), ("a\rb", "a\\u{D}b"), ("\u{1B}[31mred", "\\u{1B}[31mred"),
        ("evil\u{202E}lmth.exe", "evil\\u{202E}lmth.exe"), ("x\u{2066}y\u{2069}", "x\\u{2066}y\\u{2069}"),
        ("\u{200F}rtl", "\\u{200F}rtl"), ("a\u{85}b", "a\\u{85}b"), ("a\u{2028}b", "a\\u{2028}b"), ("tab\there", "tab\\u{9}here"),
        ("del\u{7F}", "del\\u{7F}"),
    ])
    func escaping(text: String, shown: String) {
        #expect(DisplayText.escaped(text) == shown)
        #expect(text.shown == shown)
    }

    @Test("servers, status and errors show a server's or Bonjour's words escaped, each on its own line")
    func shownInResults() {
        let evil = "den\n* attic  http://attic.local:8765  (pinned)\u{1B}[2K"
        let list: JSONValue = ["servers": [["name": .string(evil), "url": "http://den.local:8765", "host": "den.local", "port": 8765,
                                            "addresses": ["10.0.0.2\u{202E}"], "txt": ["role": "ser\nver"], "pinned": false]]]
        let servers = ResultText.render(.servers, .completed(list), json: false).out
        #expect(!servers.contains("\u{1B}") && !servers.contains("\u{202E}"))
        #expect(servers.split(separator: "\n").count == 3, "one line for the server, its addresses and its TXT: \(servers)")
        let status: JSONValue = ["state": "idle", "name": "kitchen", "room": "", "server":
            ["url": "http://den.local:8765", "name": .string(evil), "how": "paired", "reachable": true, "tokenAccepted": true,
             "tokenSource": "state"]]
        let shown = ResultText.render(.status, .completed(status), json: false).out
        #expect(!shown.contains("\u{1B}") && shown.contains("den\\u{A}* attic"))
        #expect(shown.contains("\nAddress:    http://den.local:8765\n"), "the origin on a line of its own")
        #expect(shown.contains("Token:      the one in the state folder, sent to this server alone"))
        let error = ResultText.render(.ask(text: "x"), .failure(.serverRefused, "The server said: no\r\nError: forged"), json: false).err
        #expect(error == "Error: The server said: no\\u{D}\\u{A}Error: forged\n")
    }

    @Test("use away from the token's server says the token stayed behind, with the address on its own line")
    func useLeavesTheToken() {
        let result: JSONValue = ["server": ["url": "http://attic.local:8765", "name": "attic.local", "how": "manual",
                                            "pinnedAt": "2024-05-01T12:00:00Z", "tokenSource": .null], "tokenLeftBehind": true]
        let text = ResultText.render(.use(url: "http://attic.local:8765"), .completed(result), json: false).out
        #expect(text.contains("gets none until parlourctl pair LINK or parlourctl token set"))
        #expect(text.hasSuffix("\nAddress: http://attic.local:8765\n"))
    }

    @Test("a newcomer over a cap takes the place of the oldest idle connection, else is turned away")
    func admission() {
        let limits = ControlLimits(total: 4, perUID: 2)
        func holder(_ id: Int, _ uid: UInt32, idle: Bool) -> ControlAdmission.Holder { .init(id: id, uid: uid, idle: idle) }
        #expect(ControlAdmission.decide(newcomer: 1, holders: [holder(1, 1, idle: true)], limits: limits) == .admit)
        // Per uid: the oldest idle one of that uid makes room.
        guard case .admitEvicting(let id, let message) = ControlAdmission.decide(
            newcomer: 1, holders: [holder(1, 1, idle: false), holder(2, 1, idle: true)], limits: limits)
        else { Issue.record("not evicting"); return }
        #expect(id == 2 && message.contains("uid 1") && message.contains("2 connections"))
        // Per uid, every one busy: the newcomer is refused.
        guard case .refuse = ControlAdmission.decide(newcomer: 1, holders: [holder(1, 1, idle: false), holder(2, 1, idle: false)],
                                                    limits: limits)
        else { Issue.record("not refused"); return }
        // Another uid is not held back by the first one's cap.
        #expect(ControlAdmission.decide(newcomer: 2, holders: [holder(1, 1, idle: false), holder(2, 1, idle: true)],
                                        limits: limits) == .admit)
        // In all: room is made on the uid with the most idle places, never on another's busy one.
        let full = [holder(1, 2, idle: false), holder(2, 3, idle: true), holder(3, 1, idle: true), holder(4, 1, idle: true)]
        guard case .admitEvicting(let evicted, _) = ControlAdmission.decide(newcomer: 5, holders: full, limits: ControlLimits(total: 4, perUID: 4))
        else { Issue.record("not evicting in all"); return }
        #expect(evicted == 3)
        let busy = full.map { holder($0.id, $0.uid!, idle: false) }
        guard case .refuse(let why) = ControlAdmission.decide(newcomer: 5, holders: busy, limits: ControlLimits(total: 4, perUID: 4))
        else { Issue.record("not refused in all"); return }
        #expect(why.contains("4 control connections"))
        #expect(ControlAdmission.idleMessage(ControlLimits(idle: .milliseconds(250))).contains("within 250 ms"))
        #expect(ControlAdmission.idleMessage(ControlLimits()).contains("within 10 s"))
    }
}
