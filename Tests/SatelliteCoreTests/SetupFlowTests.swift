// setup's steps without a terminal: SetupFlow is given the status, the lines a
// person types and the daemon's results, and each test checks what it says,
// asks and sends. The terminal itself is tested in SatelliteTests (SetupTests).
import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("setup's steps")
struct SetupFlowTests {
    /// A walk through setup: every text printed, and the action now due.
    struct Walk {
        var flow: SetupFlow
        var action: SetupAction
        var printed = ""

        init(status: JSONValue, extras: [SetupExtra] = SetupExtra.all) {
            flow = SetupFlow(status: status, extras: extras)
            action = flow.start()
            note()
        }

        private mutating func note() {
            switch action {
            case .ask(let text, let prompt, _): printed += text + prompt + "\n"
            case .send(let text, _), .meter(let text, _), .finish(let text, _): printed += text
            }
        }

        /// The text of the action due (an ask's text and prompt).
        var text: String {
            switch action {
            case .ask(let text, let prompt, _): text + prompt
            case .send(let text, _), .meter(let text, _), .finish(let text, _): text
            }
        }

        var prompt: String? { if case .ask(_, let prompt, _) = action { return prompt }; return nil }
        var request: JSONValue? { if case .send(_, let request) = action { return request }; return nil }

        mutating func type(_ line: String?, sourceLocation: SourceLocation = #_sourceLocation) {
            guard case .ask = action else {
                Issue.record("typed \(line ?? "^D") while the action was \(action)", sourceLocation: sourceLocation)
                return
            }
            action = flow.next(.line(line))
            note()
        }

        mutating func answer(_ result: ControlResult, sourceLocation: SourceLocation = #_sourceLocation) {
            switch action {
            case .send, .meter: break
            default: Issue.record("a result came while the action was \(action)", sourceLocation: sourceLocation)
            }
            action = flow.next(.result(result))
            note()
        }
    }

    static let fresh: JSONValue = [
        "state": "unpaired", "room": "", "transport": "record", "wake": "server",
        "server": ["url": nil, "name": nil, "how": nil, "reachable": nil, "tokenAccepted": nil],
        "microphone": ["device": "testmic", "ok": true, "error": nil],
    ]

    static let setUp: JSONValue = [
        "state": "idle", "room": "kitchen", "transport": "stream", "wake": "server",
        "server": ["url": "http://den.local:8765", "name": "Parlour on den", "how": "paired", "reachable": true, "tokenAccepted": true],
        "microphone": ["device": "testmic", "ok": true, "error": nil],
    ]

    static let link = "parlour://pair?url=http%3A%2F%2Fden.local%3A8765&token=s3cret-token&name=Parlour%20on%20den"
    static let pinned: JSONValue = ["server": ["url": "http://den.local:8765", "name": "Parlour on den", "how": "paired"]]
    static let heard: JSONValue = ["seconds": 5, "rms": -40.0, "peak": -6.0, "loudest": -20.0, "signal": "ok"]

    @Test("a fresh satellite: paste a link, see the level, set the room, and finish with what was set")
    func wholeWalk() throws {
        var walk = Walk(status: Self.fresh)
        #expect(walk.text.hasPrefix("Set up Parlour\nFour steps: Connect, Voice, Extras, Finish."))
        #expect(walk.text.contains("\nStep 1 of 4, Connect\nPair with your Parlour server. On the server, run parlour pair"))
        #expect(walk.prompt == "Pairing link, 2 or 3 [Enter skips for now]: ")

        walk.type(Self.link)
        #expect(walk.text == "Pair with Parlour on den? Everything you ask will go to http://den.local:8765. "
            + "Only pair with a link your own Parlour server showed you.\nPair? [Y/n]: ")
        walk.type("")
        #expect(walk.request == ["cmd": "pair", "link": .string(Self.link)])
        #expect(walk.text == "Pairing with Parlour on den: shaking hands, and checking the token opens the door.\n")

        walk.answer(.completed(Self.pinned))
        #expect(walk.text.hasPrefix("Paired with Parlour on den at http://den.local:8765 (paired).\n\nStep 2 of 4, Voice\nHow it hears you."))
        #expect(walk.prompt == "Press Enter to start listening [or type skip]: ")
        walk.type("")
        #expect(walk.action == .meter("Listening ...\n", seconds: 5))
        walk.answer(.completed(Self.heard))
        #expect(walk.text.hasPrefix("The microphone hears you: the loudest moment was -20.0 dBFS.\n"))
        walk.type("")
        #expect(walk.text.hasPrefix("Which room is this satellite in?"))
        #expect(walk.prompt == "Room [Enter leaves it unset]: ")
        walk.type("kitchen")
        #expect(walk.request == ["cmd": "room", "name": "kitchen"])
        walk.answer(.completed(["room": "kitchen"]))
        #expect(walk.request == ["cmd": "status"])
        #expect(walk.text.hasPrefix("The room is now kitchen.\n\nStep 3 of 4, Extras\nOptional, and in the config later.\n"
            + "  Listening: one recording per parlourctl listen (record).\n"))
        #expect(walk.text.hasSuffix("\nStep 4 of 4, Finish\n"))

        let now: JSONValue = ["room": "kitchen", "server": ["url": "http://den.local:8765", "name": "Parlour on den", "how": "paired",
                                              "reachable": true, "tokenAccepted": nil],
               "microphone": ["device": "testmic"]]
        walk.answer(.completed(now))
        #expect(walk.action == .finish("""
            All set.
              Server      Parlour on den at http://den.local:8765 (paired); the token is accepted.
              Room        kitchen
              Microphone  testmic: heard you (loudest -20.0 dBFS).
            Ask something: say the wake word, or run parlourctl listen. Run parlourctl setup again to change anything; \
            parlourctl doctor checks everything.

            """, exitCode: 0))
        // The link holds the token: it went to the daemon, and into nothing printed.
        #expect(!walk.printed.contains("s3cret"))
    }

    @Test("something that is not a link is said so, and a refused pairing shows at once and can be tried again")
    func refusedPairing() {
        var walk = Walk(status: Self.fresh)
        walk.type("parlour://pair?token=s3cret-token")
        #expect(walk.text.hasPrefix("That is not a pairing link: "))
        #expect(walk.prompt == "Pairing link, 2 or 3 [Enter skips for now]: ")
        walk.type(Self.link)
        walk.type("n")
        #expect(walk.text.hasPrefix("Not paired.\n"))
        walk.type(Self.link)
        walk.type("maybe")
        #expect(walk.prompt == "Please answer y or n. Pair? [Y/n]: ")
        walk.type("y")
        walk.answer(.failure(.tokenRefused, "/health at http://den.local:8765 answered, but /v1/models refused the token."))
        #expect(walk.text.hasPrefix("Could not pair: /health at http://den.local:8765 answered, but /v1/models refused the token.\n"))
        #expect(walk.prompt == "Pairing link, 2 or 3 [Enter skips for now]: ")
        walk.type(Self.link)
        walk.type("")
        walk.answer(.completed(Self.pinned))
        #expect(walk.text.contains("Step 2 of 4, Voice"))
        #expect(!walk.printed.contains("s3cret"))
    }

    @Test("a server Bonjour found: use it, and when it refuses the token, type one without echo and try again")
    func bonjourServer() {
        var walk = Walk(status: Self.fresh)
        walk.type("2")
        #expect(walk.request == ["cmd": "servers"])
        walk.answer(.completed(["servers": []]))
        #expect(walk.text.hasPrefix("Nothing seen so far."))
        walk.type("2")
        walk.answer(.completed(["servers": [["name": "Parlour on den", "url": "http://den.local:8765"],
                                             ["name": "Parlour on attic", "url": "http://attic.local:8765"]]]))
        #expect(walk.text == "  1  Parlour on den  http://den.local:8765\n  2  Parlour on attic  http://attic.local:8765\n"
            + "Number of the server to pair with [Enter goes back]: ")
        walk.type("3")
        #expect(walk.prompt == "Give a number from 1 to 2 [Enter goes back]: ")
        walk.type("2")
        #expect(walk.request == ["cmd": "use", "url": "http://attic.local:8765"])
        walk.answer(.failure(.notPaired, "The server asks for a token and none is set."))
        #expect(walk.text.hasPrefix("Parlour on attic answers, and asks for a token this satellite does not have yet.\n"))
        walk.type("tok-000")
        walk.answer(.completed(["stored": true]))
        walk.answer(.failure(.tokenRefused, "refused"))
        #expect(walk.text.hasPrefix("Parlour on attic answered, but does not take the token this satellite has.\n"))
        guard case .ask(_, let prompt, let secret) = walk.action else { Issue.record("no token asked"); return }
        #expect(prompt == "Token [Enter goes back]: " && secret)
        walk.type("tok-123")
        #expect(walk.request == ["cmd": "token set", "token": "tok-123"])
        walk.answer(.completed(["stored": true]))
        #expect(walk.request == ["cmd": "use", "url": "http://attic.local:8765"])
        walk.answer(.failure(.tokenRefused, "refused"))
        walk.type("tok-456")
        walk.answer(.completed(["stored": true]))
        walk.answer(.completed(["server": ["url": "http://attic.local:8765", "name": "Parlour on attic", "how": "manual"]]))
        #expect(walk.text.hasPrefix("Paired with Parlour on attic at http://attic.local:8765 (manual).\n"))
        #expect(!walk.printed.contains("tok-"))
    }

    @Test("use on another server than the token's pins it without one: setup asks for its token, then checks again")
    func tokenLeftBehind() {
        var walk = Walk(status: Self.fresh)
        walk.type("2")
        walk.answer(.completed(["servers": [["name": "Parlour on attic", "url": "http://attic.local:8765"]]]))
        walk.type("1")
        #expect(walk.request == ["cmd": "use", "url": "http://attic.local:8765"])
        walk.answer(.completed(["server": ["url": "http://attic.local:8765", "name": "Parlour on attic", "how": "manual",
                                           "tokenSource": .null], "tokenLeftBehind": true]))
        #expect(walk.text.hasPrefix("Parlour on attic answers, and asks for a token this satellite does not have yet.\n"))
        walk.type("tok-789")
        #expect(walk.request == ["cmd": "token set", "token": "tok-789"])
        walk.answer(.completed(["stored": true]))
        #expect(walk.request == ["cmd": "use", "url": "http://attic.local:8765"])
        walk.answer(.completed(["server": ["url": "http://attic.local:8765", "name": "Parlour on attic", "how": "manual",
                                           "tokenSource": "state"], "tokenLeftBehind": false]))
        #expect(walk.text.hasPrefix("Paired with Parlour on attic at http://attic.local:8765 (manual).\n"))
        #expect(!walk.printed.contains("tok-"))
    }

    @Test("by hand: an address is checked here, and the server there and then")
    func byHand() {
        var walk = Walk(status: Self.fresh)
        walk.type("3")
        #expect(walk.text.hasPrefix("Set it up by hand: the server's address, and its token if this satellite does not have it yet.\n"))
        #expect(walk.prompt == "Address (such as den.local:8765) [Enter goes back]: ")
        walk.type("ftp://den")
        #expect(walk.text.hasPrefix("That is not an address such as den.local:8765"))
        walk.type("den.local:8765/")
        #expect(walk.request == ["cmd": "use", "url": "http://den.local:8765"])
        walk.answer(.failure(.serverUnreachable, "The check of /health at http://den.local:8765 failed."))
        #expect(walk.text.hasPrefix("Could not pair: The check of /health at http://den.local:8765 failed.\n"))
        #expect(walk.prompt == "Pairing link, 2 or 3 [Enter skips for now]: ")
    }

    @Test("typed addresses", arguments: [
        ("den.local:8765", "http://den.local:8765"), ("http://10.0.0.2:8765/", "http://10.0.0.2:8765"),
        ("https://den.example", "https://den.example"), ("[fe80::1]:8765", "http://[fe80::1]:8765"),
        ("ftp://den", nil), ("den.local:99999", nil), ("http://den/api", nil), ("user@den:1", nil), ("", nil),
    ])
    func typedAddresses(typed: String, url: String?) {
        #expect(SetupFlow.serverURL(typed) == url)
    }

    @Test("run again on a satellite paired before setup existed: it says it is set up, and Enter keeps everything")
    func runAgain() {
        #expect(SetupFlow.isSetUp(status: Self.setUp))
        #expect(!SetupFlow.isSetUp(status: Self.fresh))
        var walk = Walk(status: Self.setUp)
        #expect(walk.text.contains("This satellite is set up already: it uses Parlour on den at http://den.local:8765 (paired), "
            + "in the kitchen. Go through the steps to change anything; Enter keeps what is there."))
        #expect(walk.prompt == "Pairing link, 2 or 3 [Enter keeps Parlour on den]: ")
        walk.type("")
        #expect(walk.text.hasPrefix("Kept Parlour on den at http://den.local:8765 (paired).\n"))
        walk.type("skip")
        #expect(walk.prompt == "Room [Enter keeps kitchen]: ")
        walk.type("")
        // Nothing changed, so nothing but status is sent.
        #expect(walk.request == ["cmd": "status"])
        #expect(walk.text.contains("  Listening: the server listens for the wake word.\n"))
        walk.answer(.completed(Self.setUp))
        guard case .finish(let text, 0) = walk.action else { Issue.record("\(walk.action)"); return }
        #expect(text.contains("All set.\n  Server      Parlour on den at http://den.local:8765 (paired); the token is accepted.\n"
            + "  Room        kitchen\n  Microphone  testmic: not tried.\n"))
    }

    @Test("a configured server is not asked about")
    func configured() {
        var status = Self.setUp
        if case .object(var fields) = status {
            fields["server"] = ["url": "http://10.0.0.2:8765", "name": "10.0.0.2", "how": "configured"]
            status = .object(fields)
        }
        let walk = Walk(status: status)
        #expect(walk.text.contains("server.url in the config names the server: http://10.0.0.2:8765. Change it there; setup cannot.\n\nStep 2 of 4, Voice"))
    }

    @Test("the end of input stops at once, exit 3, at every question", arguments: [0, 1, 2, 3])
    func endOfInput(questionsFirst: Int) {
        var walk = Walk(status: Self.setUp)
        for answer in ["", "skip", ""].prefix(questionsFirst) { walk.type(answer) }
        if case .ask = walk.action { walk.type(nil) } else { walk.answer(.completed(Self.setUp)) }
        guard case .finish(let text, let code) = walk.action else { Issue.record("\(walk.action)"); return }
        if questionsFirst < 3 {
            #expect(code == 3)
            #expect(text.hasSuffix("\nSetup stopped. What was set so far stays set; run parlourctl setup again to go on.\n"))
        }
    }

    @Test("a room that is too long is asked again; a refused one is said and asked again")
    func rooms() {
        var walk = Walk(status: Self.setUp)
        walk.type("")
        walk.type("skip")
        walk.type(String(repeating: "x", count: 41))
        #expect(walk.text.hasPrefix("A room name is at most 40 characters, with no control characters.\n"))
        walk.type("den")
        walk.answer(.failure(.unknownCommand, "There is no command \"room\"."))
        #expect(walk.text.hasPrefix("The room could not be set: There is no command \"room\".\n"))
        #expect(walk.prompt == "Room [Enter keeps kitchen]: ")
    }

    @Test("the microphone that cannot be tried is said, and setup goes on to the room")
    func meterFails() {
        var walk = Walk(status: Self.setUp)
        walk.type("")
        walk.type("")
        walk.answer(.failure(.muted, "The satellite is muted."))
        #expect(walk.text.hasPrefix("The microphone could not be tried: The satellite is muted.\nWhich room"))
        var again = Walk(status: Self.setUp)
        again.type("")
        again.type("")
        again.answer(.completed(["signal": "silent", "loudest": -96.0]))
        again.type("again")
        #expect(again.action == .meter("Listening ...\n", seconds: 5))
    }

    @Test("an extra asked here is a row: its question, its request, and a refusal said")
    func extrasRow() {
        let notice = SetupExtra(title: "Offline notice", current: { $0["notice"]?.stringValue ?? "off" },
                                change: .ask(prompt: "Say so when the house cannot be reached? on or off") { answer in
            guard ["on", "off"].contains(answer) else { return .failure(SatelliteError(.invalidRequest, "Answer on or off.")) }
            return .success(["cmd": "notice", "enabled": .bool(answer == "on")])
        })
        var walk = Walk(status: Self.setUp, extras: [notice] + SetupExtra.all)
        walk.type("")
        walk.type("skip")
        walk.type("")
        #expect(walk.text.contains("  Offline notice: off.\n"))
        #expect(walk.prompt == "Say so when the house cannot be reached? on or off [Enter keeps off]: ")
        walk.type("perhaps")
        #expect(walk.text.hasPrefix("Answer on or off.\n"))
        walk.type("on")
        #expect(walk.request == ["cmd": "notice", "enabled": true])
        walk.answer(.completed([:]))
        #expect(walk.request == ["cmd": "status"])
        #expect(walk.text.hasPrefix("  Listening: "))
    }

    @Test("with no extras the step says so")
    func noExtras() {
        var walk = Walk(status: Self.setUp, extras: [])
        walk.type("")
        walk.type("skip")
        walk.type("")
        #expect(walk.text.contains("Nothing to choose yet: later versions add choices here"))
    }
}
