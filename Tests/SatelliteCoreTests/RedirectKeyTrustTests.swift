// The pure parts of "the token reaches the pinned server only": where a redirect
// points (shown as an origin only), what pairing does with an https key, and the
// key's place in pin.json.
import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("redirects, https keys and the pin")
struct RedirectKeyTrustTests {
    static let base = "http://den.local:8765/v1/models?x=1"

    @Test("a Location is shown as scheme://host:port only", arguments: [
        ("http://evil.example:9000/steal?token=abc", "http://evil.example:9000"),
        ("https://evil.example/x", "https://evil.example:443"),
        ("HTTP://Evil.Example/x", "http://evil.example:80"),
        ("http://user:secret@evil.example:81/", "http://evil.example:81"),
        ("http://[2001:db8::9]:8080/listen", "http://[2001:db8::9]:8080"),
        ("ws://10.0.0.9/listen", "ws://10.0.0.9:80"),
        ("//evil.example:7/p", "http://evil.example:7"),
        ("/elsewhere?token=abc", "http://den.local:8765"),
        ("elsewhere", "http://den.local:8765"),
        ("gopher://evil.example/x", "gopher://evil.example"),
        ("http://evil\u{1B}[2J.example/", "an address that cannot be shown"),
        ("http://evil.example\nX-Forged: 1/", "an address that cannot be shown"),
        ("http://evil.example:99999/", "an address that cannot be shown"),
        ("ht\u{202E}tp://evil/", "an address that cannot be shown"),
        ("", "no Location given"),
    ])
    func origin(location: String, shown: String) {
        #expect(Redirect.origin(location: location, base: Self.base) == shown)
    }

    @Test("a redirect is server_refused naming the status and origin, never the path or query")
    func refusal() {
        let error = Redirect.refusal(status: 307, location: "http://evil.example:9/listen?token=abc", base: Self.base, route: "/listen")
        #expect(error.code == .serverRefused)
        #expect(error.message.hasPrefix("The server answered /listen with a redirect (status 307) to http://evil.example:9, which the satellite never follows"))
        #expect(!error.message.contains("token=abc") && !error.message.contains("evil.example:9/"))
        let bare = Redirect.refusal(status: 302, location: nil, base: Self.base, route: "/health")
        #expect(bare.message.hasPrefix("The server answered /health with a redirect (status 302), which"))
    }

    static let a = "sha256/" + Data(repeating: 1, count: 32).base64EncodedString()
    static let b = "sha256/" + Data(repeating: 2, count: 32).base64EncodedString()

    @Test("pairing pins a vouched-for or confirmed key, asks about an unknown one, and refuses a key other than the one confirmed",
          arguments: [
        (a, true, nil, ServerKey.Decision.pin(a)),
        (a, false, nil, .ask(a)),
        (a, false, a, .pin(a)),
        (a, true, a, .pin(a)),
        (b, false, a, .changed(shown: b, confirmed: a)),
        (b, true, a, .changed(shown: b, confirmed: a)),
    ] as [(String, Bool, String?, ServerKey.Decision)])
    func decide(shown: String, verified: Bool, confirmed: String?, decision: ServerKey.Decision) {
        #expect(ServerKey.decide(shown: shown, verified: verified, confirmed: confirmed) == decision)
    }

    @Test("a key is sha256/ and the base64 of 32 bytes", arguments: [
        (a, true), ("sha256/" + Data(repeating: 1, count: 31).base64EncodedString(), false), ("sha1/" + a.dropFirst(7), false),
        ("sha256/not base64!", false), ("", false),
    ])
    func keyForm(key: String, valid: Bool) {
        #expect(ServerKey.isValid(key) == valid)
    }

    @Test("the question carries the key and says nothing was sent; the refusal names both keys")
    func texts() {
        let asked = ServerKey.unconfirmed(Self.a, url: "https://den.local:8443")
        #expect(asked.code == .serverKeyUnconfirmed && asked.serverKey == Self.a && asked.message.contains(Self.a))
        #expect(ControlResult.error(asked).json["key"] == .string(Self.a))
        #expect(ControlResult(json: ControlResult.error(asked).json) == .error(asked))
        let changed = ServerKey.changed(url: "https://den.local:8443", shown: Self.b, pinned: Self.a)
        #expect(changed.code == .serverKeyChanged && changed.message.contains(Self.a) && changed.message.contains(Self.b))
    }

    @Test("pin.json keeps the key, reads it back, and refuses one that is not a key")
    func pinKey() throws {
        let pin = Pin(url: "https://den.local:8443", name: "Den", how: .paired, pinnedAt: WallTime(seconds: 1_714_564_800), key: Self.a)
        #expect(String(decoding: pin.fileData, as: UTF8.self).contains(#""key":"\#(Self.a)""#))
        #expect(try Pin.decode(pin.fileData, file: "pin.json") == pin)
        let plain = Pin(url: "http://den.local:8765", name: "Den", how: .manual, pinnedAt: pin.pinnedAt)
        #expect(!String(decoding: plain.fileData, as: UTF8.self).contains("key"))
        let bad = #"{"url":"https://den.local","name":"Den","how":"paired","pinnedAt":"2024-05-01T12:00:00Z","key":"md5/x"}"#
        #expect(throws: PinFileError.self) { try Pin.decode(Array(bad.utf8), file: "pin.json") }
    }

    @Test("pair and use carry a confirmed key on the control socket, and refuse one that is not a key")
    func commands() throws {
        let use = ControlCommand.use(url: "https://den.local:8443", key: Self.a)
        #expect(use.arguments["key"] == .string(Self.a))
        #expect(ControlCommand.decode(name: "use", fields: ["url": "https://den.local:8443", "key": .string(Self.a)]) == .success(use))
        #expect(ControlCommand.decode(name: "use", fields: ["url": "https://den.local:8443"]) == .success(.use(url: "https://den.local:8443")))
        guard case .failure(let refusal) = ControlCommand.decode(name: "pair", fields: ["link": "parlour://pair?x", "key": "nope"]) else {
            Issue.record("a bad key was taken")
            return
        }
        #expect(refusal.code == .invalidRequest)
    }
}

@Suite("where the pinned server is reached, and when it is followed")
struct PinMovesTests {
    static let base: Pin = {
        var pin = Pin(url: "http://house.local:8765", name: "House", how: .discovered, pinnedAt: WallTime(seconds: 0))
        pin.addresses = ["198.51.100.2"]
        pin.instance = "Parlour on house"
        return pin
    }()

    static func announced(instance: String = "Parlour on house", port: Int = 8765, _ addresses: [String]) -> [PinMoves.Announcement] {
        [PinMoves.Announcement(instance: instance, port: port, addresses: addresses)]
    }

    @Test("the addresses pinned: none for an address host, no link-local, no repeats")
    func pinnable() {
        #expect(PinMoves.pinnable(host: "198.51.100.2", resolved: ["198.51.100.2"]) == [])
        #expect(PinMoves.pinnable(host: "2001:db8::1", resolved: ["2001:db8::1"]) == [])
        #expect(PinMoves.pinnable(host: "den.local", resolved: ["10.0.0.2", "fe80::1%eth0", "2001:db8::2", "10.0.0.2", "junk"])
            == ["10.0.0.2", "2001:db8::2"])
    }

    @Test("a move is followed only from the pinned instance, at its port, to new addresses, while the old is silent", arguments: [
        (base, false, announced(["198.51.100.4"]), true, PinMoves.Decision.follow(from: ["198.51.100.2"], to: ["198.51.100.4"], by: .instance)),
        (base, true, announced(["198.51.100.4"]), true, .stay),
        (base, false, announced(instance: "Somebody else", ["198.51.100.4"]), true, .stay),
        (base, false, announced(port: 9000, ["198.51.100.4"]), true, .stay),
        (base, false, announced(["198.51.100.2"]), true, .stay),
        (base, false, announced(["198.51.100.2", "198.51.100.4"]), true, .stay),
        (base, false, [], true, .stay),
        (base, false, announced(["198.51.100.4"]), false,
         .wait(from: ["198.51.100.2"], to: ["198.51.100.4"], by: .instance, why: "server.followMoves is false")),
    ] as [(Pin, Bool, [PinMoves.Announcement], Bool, PinMoves.Decision)])
    func decide(pin: Pin, answers: Bool, announced: [PinMoves.Announcement], follow: Bool, decision: PinMoves.Decision) {
        #expect(PinMoves.decide(pin, pinnedAnswers: answers, announced: announced, followMoves: follow) == decision)
    }

    @Test("https follows only with a pinned key; a pin without addresses or instance never moves")
    func httpsAndBare() {
        var https = Self.base
        https.url = "https://house.local:8765"
        #expect(PinMoves.decide(https, pinnedAnswers: false, announced: Self.announced(["198.51.100.4"]), followMoves: true)
            == .wait(from: ["198.51.100.2"], to: ["198.51.100.4"], by: .instance, why: "no key is pinned for this https server"))
        https.key = RedirectKeyTrustTests.a
        #expect(PinMoves.decide(https, pinnedAnswers: false, announced: Self.announced(["198.51.100.4"]), followMoves: true)
            == .follow(from: ["198.51.100.2"], to: ["198.51.100.4"], by: .instance))
        var bare = Self.base
        bare.instance = nil
        #expect(PinMoves.decide(bare, pinnedAnswers: false, announced: Self.announced(["198.51.100.4"]), followMoves: true) == .stay)
    }

    static func configured(_ url: String, instance: String? = nil) -> Pin {
        var pin = Pin(url: url, name: "house.local", how: .configured, pinnedAt: WallTime(seconds: 0))
        pin.addresses = ["198.51.100.2"]
        pin.instance = instance
        return pin
    }

    static let noInstance = "on plain http a name that resolves elsewhere proves nothing, and no Bonjour instance announced this server where it answered"
    static let ownInstance = "on plain http a name that resolves elsewhere proves nothing; only its own Bonjour instance \"Parlour on house\" announcing it there would"

    @Test("a configured server, the kept address silent: https proves itself where the name resolves, plain http is followed only where its own instance announces it", arguments: [
        (configured("https://house.local:8443"), false, ["198.51.100.4"], [], true,
         PinMoves.Decision.prove(from: ["198.51.100.2"], to: ["198.51.100.4"])),
        (configured("http://house.local:8765"), false, ["198.51.100.4"], [], true,
         .wait(from: ["198.51.100.2"], to: ["198.51.100.4"], by: .name, why: noInstance)),
        (configured("https://house.local:8443"), false, ["198.51.100.4"], [], false,
         .wait(from: ["198.51.100.2"], to: ["198.51.100.4"], by: .name, why: "server.followMoves is false")),
        (configured("https://house.local:8443"), true, ["198.51.100.4"], [], true, .stay),
        (configured("https://house.local:8443"), false, ["198.51.100.2"], [], true, .stay),
        (configured("https://house.local:8443"), false, ["198.51.100.2", "198.51.100.4"], [], true, .stay),
        (configured("https://house.local:8443"), false, [], [], true, .stay),
        (configured("https://house.local:8443"), false, ["fe80::1%lo"], [], true, .stay),
        (configured("https://198.51.100.2:8443"), false, ["198.51.100.4"], [], true, .stay),
        (base, false, ["198.51.100.4"], [], true, .stay),
        // Plain http with the instance recorded where it answered: that instance's word alone moves it.
        (configured("http://house.local:8765", instance: "Parlour on house"), false, [], announced(["198.51.100.4"]), true,
         .follow(from: ["198.51.100.2"], to: ["198.51.100.4"], by: .instance)),
        (configured("http://house.local:8765", instance: "Parlour on house"), false, ["198.51.100.5"], announced(["198.51.100.4"]), true,
         .follow(from: ["198.51.100.2"], to: ["198.51.100.4"], by: .instance)),
        (configured("http://house.local:8765", instance: "Parlour on house"), false, ["198.51.100.4"], announced(["198.51.100.4"]), false,
         .wait(from: ["198.51.100.2"], to: ["198.51.100.4"], by: .instance, why: "server.followMoves is false")),
        (configured("http://house.local:8765", instance: "Parlour on house"), true, ["198.51.100.4"], announced(["198.51.100.4"]), true, .stay),
        (configured("http://house.local:8765", instance: "Parlour on house"), false, ["198.51.100.4"],
         announced(instance: "Somebody else", ["198.51.100.4"]), true,
         .wait(from: ["198.51.100.2"], to: ["198.51.100.4"], by: .name, why: ownInstance)),
        (configured("http://house.local:8765", instance: "Parlour on house"), false, [], announced(port: 9000, ["198.51.100.4"]), true, .stay),
        (configured("http://house.local:8765", instance: "Parlour on house"), false, [], announced(["198.51.100.2"]), true, .stay),
        (configured("http://house.local:8765"), false, ["198.51.100.4"], announced(["198.51.100.4"]), true,
         .wait(from: ["198.51.100.2"], to: ["198.51.100.4"], by: .name, why: noInstance)),
        // On https the instance proves nothing: the certificate at the name's new addresses does.
        (configured("https://house.local:8443", instance: "Parlour on house"), false, [], announced(port: 8443, ["198.51.100.4"]), true, .stay),
    ] as [(Pin, Bool, [String], [PinMoves.Announcement], Bool, PinMoves.Decision)])
    func decideConfigured(pin: Pin, answers: Bool, resolved: [String], announced: [PinMoves.Announcement], follow: Bool,
                          decision: PinMoves.Decision) {
        #expect(PinMoves.decideConfigured(pin, pinnedAnswers: answers, resolved: resolved, announced: announced, followMoves: follow) == decision)
    }

    static func found(_ name: String, host: String = "house.local", port: Int = 8765, _ addresses: [String]) -> DiscoveredServer {
        DiscoveredServer(name: name, host: host, port: port, addresses: addresses, txt: [:], interface: "lo")
    }

    @Test("a configured server's instance is the one that announces its host and port where it answers, when exactly one does", arguments: [
        ([found("Parlour on house", ["198.51.100.2"])], "Parlour on house"),
        ([found("Parlour on house", ["198.51.100.2", "2001:db8::2"])], "Parlour on house"),
        ([found("Parlour on house", ["198.51.100.4"])], nil),
        ([found("Parlour on house", port: 9000, ["198.51.100.2"])], nil),
        ([found("Parlour on house", host: "other.local", ["198.51.100.2"])], nil),
        ([found("Parlour on house", ["198.51.100.2"]), found("Somebody else", ["198.51.100.2"])], nil),
        ([found("Parlour on house", ["198.51.100.2"]), found("Somebody else", ["198.51.100.4"])], "Parlour on house"),
        ([], nil),
    ] as [([DiscoveredServer], String?)])
    func announcer(found: [DiscoveredServer], instance: String?) {
        #expect(PinMoves.announcer(of: Self.configured("http://house.local:8765"), found: found) == instance)
        #expect(PinMoves.announcer(of: Self.base, found: found) == nil)
        #expect(PinMoves.announcer(of: Self.configured("https://house.local:8765"), found: found) == nil)
    }

    @Test("a configured pin without addresses never moves, and a move that waits says what to run")
    func configuredNotice() {
        var bare = Self.configured("https://house.local:8443")
        bare.addresses = []
        #expect(PinMoves.decideConfigured(bare, pinnedAnswers: false, resolved: ["198.51.100.4"], announced: [], followMoves: true) == .stay)
        let http = Self.configured("http://house.local:8765")
        let waits = PinMoves.decideConfigured(http, pinnedAnswers: false, resolved: ["198.51.100.4"], announced: [], followMoves: true)
        guard case .notice(_, let message, let fields) = PinMoves.notice(waits, pin: http, configuredFile: "/var/lib/x/configured.json") else {
            Issue.record("no notice")
            return
        }
        #expect(message.contains("no longer answers at 198.51.100.2, and its name now resolves to it at 198.51.100.4"))
        #expect(message.contains("rm /var/lib/x/configured.json && sudo systemctl restart parlour-satellite"))
        #expect(fields["from_addresses"] == "198.51.100.2" && fields["to_addresses"] == "198.51.100.4")
        #expect(PinMoves.notice(.prove(from: ["198.51.100.2"], to: ["198.51.100.4"]), pin: http, configuredFile: "c") == nil)
        let pinned = PinMoves.notice(.wait(from: ["198.51.100.2"], to: ["198.51.100.4"], by: .instance, why: "x"), pin: Self.base, configuredFile: "c")
        guard case .notice(_, let other, _) = pinned else {
            Issue.record("no notice")
            return
        }
        #expect(other.contains("its own Bonjour instance announces it at 198.51.100.4") && other.contains("parlourctl use http://house.local:8765"))
    }

    @Test("pin.json keeps the addresses and the instance, and refuses addresses that are not addresses")
    func codec() throws {
        let text = String(decoding: Self.base.fileData, as: UTF8.self)
        #expect(text.contains(#""addresses":["198.51.100.2"]"#) && text.contains(#""instance":"Parlour on house""#))
        #expect(try Pin.decode(Self.base.fileData, file: "pin.json") == Self.base)
        let bad = #"{"url":"http://house.local","name":"H","how":"manual","pinnedAt":"2024-05-01T12:00:00Z","addresses":["evil.example"]}"#
        #expect(throws: PinFileError.self) { try Pin.decode(Array(bad.utf8), file: "pin.json") }
    }
}
