// `parlourctl setup`, the first-run walk-through, as a pure state machine: it
// is given the daemon's status, then each line the person typed and each result
// the daemon sent, and answers with the next thing to do (SetupAction). The
// steps, their order and their words follow the Parlour app's own setup:
// Connect, Voice, Extras, Finish; the servers Bonjour found and typing an
// address and token by hand stay folded behind a choice, and pairing is checked
// there and then, so a wrong token shows at once and can be tried again.
// Easy to get wrong: a run on a satellite that is set up already (paired before
// setup existed, say) shows what is set and Enter keeps it; the end of input
// stops at once and changes nothing more; and no text here repeats a token.

/// The steps of `parlourctl setup`.
public struct SetupFlow: Sendable {
    /// What came back from the terminal side.
    public enum Input: Sendable, Equatable {
        /// The line typed, without its newline; nil at the end of input.
        case line(String?)
        case result(ControlResult)
    }

    /// A server as setup shows it.
    struct Server: Sendable, Equatable {
        var url: String
        var name: String
        var how: String?
    }

    private enum Stage: Sendable {
        case connect
        /// The link as pasted (the daemon parses it again), and as read here.
        case confirm(String, PairingLink)
        case pairing
        case listing
        case pick([Server])
        case using(Server)
        case token(Server)
        case settingToken(Server)
        case address
        case voice
        case metering
        case heard
        case room
        case settingRoom(String)
        case extra(Int)
        case settingExtra(Int)
        case finishing
        case done
    }

    public static let meterSeconds = 5
    static let steps = ["Connect", "Voice", "Extras", "Finish"]

    private var stage = Stage.connect
    /// Text that goes out with the next action.
    private var pending = ""
    private var server: Server?
    private var room: String
    private let status: JSONValue
    private let extras: [SetupExtra]
    /// The level meter's result, once it ran.
    private var meterResult: JSONValue?
    /// Whether this run paired (so the token is known to be accepted).
    private var paired = false

    /// `status` is the daemon's `status` response; `extras` the rows of the Extras step.
    public init(status: JSONValue, extras: [SetupExtra] = SetupExtra.all) {
        self.status = status
        self.extras = extras
        room = status["room"]?.stringValue ?? ""
        if let url = status["server"]?["url"]?.stringValue {
            server = Server(url: url, name: status["server"]?["name"]?.stringValue ?? url, how: status["server"]?["how"]?.stringValue)
        }
    }

    /// Whether the satellite counts as set up: it has a server, however it got it (a satellite
    /// paired before setup existed counts too).
    public static func isSetUp(status: JSONValue) -> Bool { status["server"]?["url"]?.stringValue != nil }

    /// What to say instead of the walk-through when there is no terminal.
    public static let needsTerminal = """
        parlourctl setup asks its questions on a terminal, and standard input is not one. \
        Without a terminal, set the satellite up with: parlourctl pair - (the link from parlour pair on \
        standard input), parlourctl room NAME, and check it with parlourctl doctor.
        """

    // MARK: Moving on

    /// The first action.
    public mutating func start() -> SetupAction {
        say("Set up Parlour\n")
        if let server {
            let inRoom = room.isEmpty ? "" : ", in the \(room)"
            say("This satellite is set up already: it uses \(Self.describe(server))\(inRoom). "
                + "Go through the steps to change anything; Enter keeps what is there. Ctrl-D stops.\n")
        } else {
            say("Four steps: \(Self.steps.joined(separator: ", ")). It takes a minute; you will need your Parlour "
                + "server nearby. Ctrl-D stops at any time.\n")
        }
        return connectStep()
    }

    /// The next action, given what came of the last one.
    public mutating func next(_ input: Input) -> SetupAction {
        switch (stage, input) {
        case (_, .line(nil)):
            stage = .done
            return .finish(flush() + "\nSetup stopped. What was set so far stays set; run parlourctl setup again to go on.\n",
                           exitCode: 3)
        case (.connect, .line(let line?)): return connect(line)
        case (.confirm(let text, let link), .line(let line?)): return confirm(text, link, line)
        case (.pairing, .result(let result)): return connected(result, to: nil)
        case (.listing, .result(let result)): return listed(result)
        case (.pick(let list), .line(let line?)): return pick(line, from: list)
        case (.using(let chosen), .result(let result)): return connected(result, to: chosen)
        case (.token(let chosen), .line(let line?)): return token(line, for: chosen)
        case (.settingToken(let chosen), .result(let result)): return tokenStored(result, for: chosen)
        case (.address, .line(let line?)): return address(line)
        case (.voice, .line(let line?)): return voice(line)
        case (.metering, .result(let result)): return metered(result)
        case (.heard, .line(let line?)): return afterMeter(line)
        case (.room, .line(let line?)): return roomAnswer(line)
        case (.settingRoom(let name), .result(let result)): return roomSet(result, name)
        case (.extra(let index), .line(let line?)): return extraAnswer(line, index)
        case (.settingExtra(let index), .result(let result)): return extraSet(result, index)
        case (.finishing, .result(let result)): return finished(result)
        default:
            stage = .done
            return .finish(flush() + "Error: setup got an answer it did not ask for; nothing more was changed.\n", exitCode: 1)
        }
    }

    // MARK: Connect

    private mutating func connectStep() -> SetupAction {
        say("\n" + Self.heading(0))
        if let server, server.how == PinHow.configured.rawValue {
            say("server.url in the config names the server: \(server.url). Change it there; setup cannot.\n")
            return voiceStep()
        }
        say("""
            Pair with your Parlour server. On the server, run parlour pair (or look under On the network on \
            its Status tab) and paste the link it shows: it carries the address and the token in one go.
              2  Choose a server found on this network
              3  Set it up by hand: an address and a token

            """)
        return askConnect()
    }

    private mutating func askConnect() -> SetupAction {
        stage = .connect
        let keep = server.map { "Enter keeps \($0.name)" } ?? "Enter skips for now"
        return .ask(flush(), prompt: "Pairing link, 2 or 3 [\(keep)]: ", secret: false)
    }

    private mutating func connect(_ line: String) -> SetupAction {
        let answer = line.trimmingSpaces()
        switch answer {
        case "":
            say(server.map { "Kept \(Self.describe($0)).\n" } ?? "Skipped for now: the satellite has no server yet.\n")
            return voiceStep()
        case "2":
            stage = .listing
            return .send(flush() + "Looking on this network ...\n", request: ["cmd": "servers"])
        case "3":
            say("Set it up by hand: the server's address, and its token if this satellite does not have it yet.\n")
            return askAddress()
        default:
            switch PairingLink.parse(answer) {
            case .failure(let refusal):
                say("That is not a pairing link: \(refusal.message)\n")
                return askConnect()
            case .success(let link):
                stage = .confirm(answer, link)
                return .ask(flush() + "Pair with \(link.name)? Everything you ask will go to \(link.url). "
                                + "Only pair with a link your own Parlour server showed you.\n",
                            prompt: "Pair? [Y/n]: ", secret: false)
            }
        }
    }

    private mutating func confirm(_ text: String, _ link: PairingLink, _ line: String) -> SetupAction {
        switch line.trimmingSpaces().lowercased() {
        case "", "y", "yes":
            stage = .pairing
            return .send(flush() + "Pairing with \(link.name): shaking hands, and checking the token opens the door.\n",
                         request: Self.request(.pair(link: text)))
        case "n", "no":
            say("Not paired.\n")
            return askConnect()
        default:
            return .ask(flush(), prompt: "Please answer y or n. Pair? [Y/n]: ", secret: false)
        }
    }

    private mutating func listed(_ result: ControlResult) -> SetupAction {
        guard case .completed(let response) = result else {
            say("Could not look: \(Self.message(result))\n")
            return askConnect()
        }
        let found = (response["servers"]?.arrayValue ?? []).compactMap { s -> Server? in
            guard let url = s["url"]?.stringValue else { return nil }
            return Server(url: url, name: s["name"]?.stringValue ?? url, how: nil)
        }
        guard !found.isEmpty else {
            say("Nothing seen so far. The server needs to be on, on the same network, with Parlour running.\n")
            return askConnect()
        }
        for (index, server) in found.enumerated() { say("  \(index + 1)  \(server.name)  \(server.url)\n") }
        stage = .pick(found)
        return .ask(flush(), prompt: "Number of the server to pair with [Enter goes back]: ", secret: false)
    }

    private mutating func pick(_ line: String, from list: [Server]) -> SetupAction {
        let answer = line.trimmingSpaces()
        if answer.isEmpty { return askConnect() }
        guard let number = Int(answer), list.indices.contains(number - 1) else {
            return .ask(flush(), prompt: "Give a number from 1 to \(list.count) [Enter goes back]: ", secret: false)
        }
        return use(list[number - 1])
    }

    private mutating func use(_ chosen: Server) -> SetupAction {
        stage = .using(chosen)
        return .send(flush() + "Pairing with \(chosen.name): checking it answers and takes the token.\n",
                     request: Self.request(.use(url: chosen.url)))
    }

    /// The end of `pair` (`chosen` nil) or of `use`.
    private mutating func connected(_ result: ControlResult, to chosen: Server?) -> SetupAction {
        switch (result, chosen) {
        // `use` on another server than the token's pins it without one (INTERFACE.md): it needs its own.
        case (.completed(let response), let chosen?) where response["tokenLeftBehind"]?.boolValue == true:
            say("\(chosen.name) answers, and asks for a token this satellite does not have yet.\n")
            return askToken(for: chosen)
        case (.completed(let response), _):
            let pin = response["server"]
            let url = pin?["url"]?.stringValue ?? chosen?.url ?? "?"
            server = Server(url: url, name: pin?["name"]?.stringValue ?? chosen?.name ?? url, how: pin?["how"]?.stringValue)
            paired = true
            say("Paired with \(server.map(Self.describe) ?? url).\n")
            return voiceStep()
        case (.error(let error), let chosen?) where error.code == .tokenRefused || error.code == .notPaired:
            say(error.code == .notPaired
                ? "\(chosen.name) answers, and asks for a token this satellite does not have yet.\n"
                : "\(chosen.name) answered, but does not take the token this satellite has.\n")
            return askToken(for: chosen)
        default:
            say("Could not pair: \(Self.message(result))\n")
            return askConnect()
        }
    }

    private mutating func askToken(for chosen: Server) -> SetupAction {
        stage = .token(chosen)
        return .ask(flush() + "Enter the token by hand: PARLOUR_TOKEN, from parlour secrets on the server. "
                        + "It is not shown as you type.\n",
                    prompt: "Token [Enter goes back]: ", secret: true)
    }

    private mutating func token(_ line: String, for chosen: Server) -> SetupAction {
        let token = line.trimmingSpaces()
        if token.isEmpty { return askConnect() }
        stage = .settingToken(chosen)
        return .send(flush(), request: Self.request(.tokenSet(token: token)))
    }

    private mutating func tokenStored(_ result: ControlResult, for chosen: Server) -> SetupAction {
        guard case .completed = result else {
            say("The token could not be stored: \(Self.message(result))\n")
            return askToken(for: chosen)
        }
        return use(chosen)
    }

    private mutating func askAddress() -> SetupAction {
        stage = .address
        return .ask(flush(), prompt: "Address (such as den.local:8765) [Enter goes back]: ", secret: false)
    }

    private mutating func address(_ line: String) -> SetupAction {
        let typed = line.trimmingSpaces()
        if typed.isEmpty { return askConnect() }
        guard let url = Self.serverURL(typed) else {
            say("That is not an address such as den.local:8765 or http://192.168.1.20:8765.\n")
            return askAddress()
        }
        return use(Server(url: url, name: ServerAddress(url)?.host ?? url, how: nil))
    }

    /// A typed address as a server URL: `http://` is added when no scheme is given, and a
    /// trailing slash dropped; nil when it is not an http(s) address with a host and nothing after.
    static func serverURL(_ typed: String) -> String? {
        var url = typed.range(ofText: "://") != nil ? typed : "http://" + typed
        while url.hasSuffix("/") { url.removeLast() }
        guard ServerAddress(url) != nil, let rest = url.range(ofText: "://").map({ url[$0.upperBound...] }),
              !rest.contains(where: { "/?#@".contains($0) }) else { return nil }
        return url
    }

    // MARK: Voice

    private mutating func voiceStep() -> SetupAction {
        say("\n" + Self.heading(1) + "How it hears you. The satellite listens for \(Self.meterSeconds) seconds: say something, "
            + "and watch the level move.\n")
        stage = .voice
        return .ask(flush(), prompt: "Press Enter to start listening [or type skip]: ", secret: false)
    }

    private mutating func voice(_ line: String) -> SetupAction {
        if ["skip", "s"].contains(line.trimmingSpaces().lowercased()) { return roomStep() }
        stage = .metering
        return .meter(flush() + "Listening ...\n", seconds: Self.meterSeconds)
    }

    private mutating func metered(_ result: ControlResult) -> SetupAction {
        guard case .completed(let response) = result else {
            say("The microphone could not be tried: \(Self.message(result))\n")
            return roomStep()
        }
        meterResult = response
        say(MeterText.summary(response) + "\n")
        stage = .heard
        return .ask(flush(), prompt: "Press Enter to go on [or type again to listen again]: ", secret: false)
    }

    private mutating func afterMeter(_ line: String) -> SetupAction {
        if ["again", "a"].contains(line.trimmingSpaces().lowercased()) {
            stage = .metering
            return .meter(flush() + "Listening ...\n", seconds: Self.meterSeconds)
        }
        return roomStep()
    }

    private mutating func roomStep() -> SetupAction {
        say("Which room is this satellite in? It is sent with every request, so the house knows which lights you mean.\n")
        return askRoom()
    }

    private mutating func askRoom() -> SetupAction {
        stage = .room
        let keep = room.isEmpty ? "Enter leaves it unset" : "Enter keeps \(room)"
        return .ask(flush(), prompt: "Room [\(keep)]: ", secret: false)
    }

    private mutating func roomAnswer(_ line: String) -> SetupAction {
        let name = line.trimmingSpaces()
        if name.isEmpty || name == room { return extrasStep() }
        guard RoomName.clean(name) != nil else {
            say("A room name is at most \(RoomName.maxLength) characters, with no control characters.\n")
            return askRoom()
        }
        stage = .settingRoom(name)
        return .send(flush(), request: Self.request(.room(name: name)))
    }

    private mutating func roomSet(_ result: ControlResult, _ name: String) -> SetupAction {
        guard case .completed = result else {
            say("The room could not be set: \(Self.message(result))\n")
            return askRoom()
        }
        room = name
        say("The room is now \(name).\n")
        return extrasStep()
    }

    // MARK: Extras

    private mutating func extrasStep() -> SetupAction {
        say("\n" + Self.heading(2) + "Optional, and in the config later.\n")
        if extras.isEmpty {
            say("Nothing to choose yet: later versions add choices here, such as a spoken notice when the house cannot be reached.\n")
        }
        return extra(0)
    }

    /// Shows the extras from `index` on, asking those that are asked here.
    private mutating func extra(_ index: Int) -> SetupAction {
        var index = index
        while extras.indices.contains(index) {
            let row = extras[index]
            switch row.change {
            case .elsewhere(let where_):
                say("  \(row.title): \(row.current(status)).\n    \(where_)\n")
            case .ask(let prompt, _):
                stage = .extra(index)
                return .ask(flush() + "  \(row.title): \(row.current(status)).\n",
                            prompt: "\(prompt) [Enter keeps \(row.current(status))]: ", secret: false)
            }
            index += 1
        }
        return finishStep()
    }

    private mutating func extraAnswer(_ line: String, _ index: Int) -> SetupAction {
        let answer = line.trimmingSpaces()
        guard !answer.isEmpty, case .ask(_, let request) = extras[index].change else { return extra(index + 1) }
        switch request(answer) {
        case .failure(let refusal):
            say(refusal.message + "\n")
            return extra(index)
        case .success(let fields):
            stage = .settingExtra(index)
            return .send(flush(), request: fields)
        }
    }

    private mutating func extraSet(_ result: ControlResult, _ index: Int) -> SetupAction {
        guard case .completed = result else {
            say("\(extras[index].title) could not be set: \(Self.message(result))\n")
            return extra(index)
        }
        return extra(index + 1)
    }

    // MARK: Finish

    private mutating func finishStep() -> SetupAction {
        stage = .finishing
        return .send(flush() + "\n" + Self.heading(3), request: ["cmd": "status"])
    }

    private mutating func finished(_ result: ControlResult) -> SetupAction {
        stage = .done
        guard case .completed(let now) = result else {
            return .finish(flush() + "Error: the satellite did not say how it stands: \(Self.message(result))\n", exitCode: 1)
        }
        return .finish(flush() + summary(now), exitCode: 0)
    }

    /// What was set, from the status as it is now.
    func summary(_ now: JSONValue) -> String {
        let serverNow = now["server"]
        var lines: [String] = []
        let hasServer = serverNow?["url"]?.stringValue != nil
        lines.append(hasServer ? "All set." : "Nearly there.")
        if let url = serverNow?["url"]?.stringValue {
            var line = Self.describe(Server(url: url, name: serverNow?["name"]?.stringValue ?? url, how: serverNow?["how"]?.stringValue))
            switch serverNow?["tokenAccepted"]?.boolValue {
            case false?: line += "; the token is refused: pair again"
            case true?: line += "; the token is accepted"
            case nil: if paired { line += "; the token is accepted" }
            }
            if serverNow?["reachable"]?.boolValue == false { line += "; it does not answer now" }
            lines.append("  Server      \(line).")
        } else {
            lines.append("  Server      Not paired.")
        }
        let roomNow = now["room"]?.stringValue ?? room
        lines.append("  Room        \(roomNow.isEmpty ? "None." : roomNow)")
        let device = now["microphone"]?["device"]?.stringValue ?? "The microphone"
        if let heard = meterResult {
            let loudest = String(printf: "%.1f dBFS", heard["loudest"]?.numberValue ?? MeterText.floorDBFS)
            lines.append("  Microphone  \(device): " + (MeterText.heardVoice(heard)
                ? "heard you (loudest \(loudest))." : "heard nothing louder than \(loudest)."))
        } else {
            lines.append("  Microphone  \(device): not tried.")
        }
        if hasServer {
            lines.append("Ask something: say the wake word, or run parlourctl listen. Run parlourctl setup again to change "
                         + "anything; parlourctl doctor checks everything.")
        } else {
            lines.append("The satellite is not talking to a server yet. Run parlourctl setup again, or pair later with "
                         + "parlourctl pair LINK.")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: Pieces

    private mutating func say(_ text: String) { pending += text }

    private mutating func flush() -> String {
        defer { pending = "" }
        return pending
    }

    /// "Step 2 of 4, Voice", as the app's step bar says it.
    static func heading(_ index: Int) -> String { "Step \(index + 1) of \(steps.count), \(steps[index])\n" }

    /// "Parlour on den at http://den.local:8765 (paired)".
    static func describe(_ server: Server) -> String {
        "\(server.name) at \(server.url)" + (server.how.map { " (\($0))" } ?? "")
    }

    static func message(_ result: ControlResult) -> String {
        switch result {
        case .error(let error): error.message
        case .cancelled(let reason): reason.sentence
        case .completed: "it answered something else."
        }
    }

    /// `cmd` and the arguments of a command, for `SetupAction.send`.
    static func request(_ command: ControlCommand) -> JSONValue {
        var fields = command.arguments
        fields["cmd"] = .string(command.name)
        return .object(fields)
    }
}
