// parlourctl: the satellite's control tool. It parses the command line, sends
// one request to the daemon over the control socket, prints the one result and
// exits with INTERFACE.md's code for it.
import Glibc
import ControlCore

signal(SIGPIPE, SIG_IGN)

let environment = ProcessEnvironment.variables
let plain = ResultText.prefersPlain(environment: environment)

func finish(_ command: ControlCommand, _ result: ControlResult, json: Bool) -> Never {
    let text = ResultText.render(command, result, json: json, plain: plain)
    Output.out(text.out)
    Output.err(text.err)
    exit(ResultText.exitCode(command, result))
}

/// Sends `command` and prints its one result. With `callback`, the daemon also sends the
/// result there; without `wait`, the result here is only that the daemon accepted it.
func run(_ command: ControlCommand, json: Bool, socket: String, callback: CallbackURL? = nil, wait: Bool = true) -> Never {
    finish(command, exchange(command, json: json, socket: socket, callback: callback, wait: wait), json: json)
}

/// `pair` or `use`: when the https server's certificate is vouched for by nobody, the daemon
/// answers with the key it shows; this asks about it (or `yes` takes it) and sends the command
/// again with that key, which the daemon pins only if the server still shows it.
func runTrusting(_ command: (String?) -> ControlCommand, yes: Bool, json: Bool, socket: String) -> Never {
    let first = exchange(command(nil), json: json, socket: socket)
    guard case .error(let error) = first, error.code == .serverKeyUnconfirmed, let key = error.serverKey else {
        finish(command(nil), first, json: json)
    }
    if !yes {
        Output.err(error.message + "\n")
        switch Input.confirm("Trust the server with the key \(key)? [y/N] ") {
        case true?: break
        case false?: finish(command(nil), .failure(.invalidRequest, "The key was not trusted, so nothing was changed."), json: json)
        case nil: finish(command(nil), first, json: json)
        }
    }
    run(command(key), json: json, socket: socket)
}

/// Sends `command` and returns its one result, printing the events that come before it.
func exchange(_ command: ControlCommand, json: Bool, socket: String, callback: CallbackURL? = nil, wait: Bool = true) -> ControlResult {
    let client: ControlClient
    do {
        client = try ControlClient(path: socket)
        try client.send(ControlProtocol.encode(command, id: "1", callback: callback, wait: wait))
    } catch {
        return .error(error)
    }
    if case .listen(hold: true) = command {
        // Holding: capture runs until our standard input closes, then `end` sends what was heard.
        client.whenInputEnds = { [unowned client] in try? client.send(ControlProtocol.encode(.end, id: "2")) }
    }
    while let line = client.readLine() {
        guard let value = try? JSONValue.parse(line) else { continue }
        if value["event"] != nil {
            Output.out(ResultText.event(value, json: json))
            continue
        }
        guard value["id"] == "1", let result = ControlResult(json: value) else { continue }
        return result
    }
    return .failure(.daemonUnavailable, "The satellite closed the connection before answering; see journalctl -u parlour-satellite.")
}

/// "Parlour on den (http://den.local:8765)" from the daemon's status, for a question; "the pinned server" when
/// the daemon cannot say.
func pinnedServer(socket: String) -> String {
    guard let client = try? ControlClient(path: socket), (try? client.send(ControlProtocol.encode(.status, id: "1"))) != nil else {
        return "the pinned server"
    }
    while let line = client.readLine() {
        guard let value = try? JSONValue.parse(line), value["id"] == "1" else { continue }
        guard let url = value["response"]?["server"]?["url"]?.stringValue else { break }
        return value["response"]?["server"]?["name"]?.stringValue.map { "\($0) (\(url))" } ?? url
    }
    return "the pinned server"
}

switch ParlourctlCommandLine.parse(Array(CommandLine.arguments.dropFirst())) {
case .failure(let usage):
    Output.err(usage.description + "\n")
    exit(2)
case .success(let invocation):
    let socket = SatellitePaths.resolve(options: invocation.socket.map { ["socket": $0] } ?? [:], environment: environment).socket
    switch invocation.action {
    case .help(let text):
        print(text, terminator: text.hasSuffix("\n") ? "" : "\n")
        exit(0)
    case .version:
        print("parlourctl \(SatelliteVersion.satellite)")
        run(.version, json: invocation.json, socket: socket)
    case .run(let command):
        run(command, json: invocation.json, socket: socket)
    case .runWithCallback(let command, let callback, let wait):
        run(command, json: invocation.json, socket: socket, callback: callback, wait: wait)
    case .pair(let argument, let yes):
        let json = invocation.json
        let text = argument == "-" ? Input.readAll() : argument
        if argument != "-" {
            Output.err("Note: the link, and the token in it, is now in this shell's history and, while "
                + "parlourctl runs, in the process list. Next time run parlourctl pair - and paste the link on standard input.\n")
        }
        let command = ControlCommand.pair(link: text)
        let pairing = { (key: String?) in ControlCommand.pair(link: text, key: key) }
        switch PairingLink.parse(text) {
        case .failure(let refusal):
            finish(command, .error(refusal), json: json)
        case .success(let link):
            // The name and address come from whoever made the link: shown escaped, the address alone on its line.
            let origin = ServerAddress(link.url)?.origin ?? link.url
            if !yes {
                switch Input.confirm("Pair with \(link.name.shown)?\nAddress: \(origin.shown)\n"
                    + "Everything said here, and the link's token, would go to that address. [y/N] ") {
                case true?: break
                case false?:
                    finish(command, .failure(.invalidRequest, "Not paired: the pairing was not confirmed. Nothing was changed."), json: json)
                case nil:
                    finish(command, .failure(.invalidRequest,
                        "The link is for \(link.name) at \(origin), but there is no terminal to confirm on, so nothing was changed. "
                            + "Check that this is your server and run the same command again with --yes."), json: json)
                }
            } else if !json {
                Output.err("Pairing with \(link.name.shown)\nAddress: \(origin.shown)\n")
            }
            runTrusting(pairing, yes: yes, json: json, socket: socket)
        }
    case .use(let url, let yes):
        runTrusting({ ControlCommand.use(url: url, key: $0) }, yes: yes, json: invocation.json, socket: socket)
    case .setTokenFromInput:
        run(.tokenSet(token: Input.readAll()), json: invocation.json, socket: socket)
    case .stopService(let name, let yes):
        let command = ControlCommand.serverService(name: name, action: .stop)
        if !yes {
            let noTerminal = UsageError("Stopping \(name) changes how the house answers, and there is no terminal to ask on. "
                + "Add --yes to stop it anyway.", helpCommand: "parlourctl server stop")
            guard isatty(0) == 1 else {
                Output.err(noTerminal.description + "\n")
                exit(UsageError.exitCode)
            }
            switch Input.confirm("Stop \(name) on \(pinnedServer(socket: socket))? \(Input.stopping(name)) [y/N] ") {
            case true?: break
            case false?:
                let declined = ControlResult.cancelled(.cancelledByUser)
                if invocation.json { finish(command, declined, json: true) }
                Output.err("Not stopped: \(name) was left as it is.\n")
                exit(declined.exitCode)
            case nil:
                Output.err(noTerminal.description + "\n")
                exit(UsageError.exitCode)
            }
        }
        run(command, json: invocation.json, socket: socket)
    case .setup:
        SetupSession.run(socket: socket, json: invocation.json, plain: plain)
    }
}
