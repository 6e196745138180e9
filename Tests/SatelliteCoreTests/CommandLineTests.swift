import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("parlourctl command line")
struct ParlourctlCommandLineTests {
    private static func run(_ command: ControlCommand, json: Bool = false, socket: String? = nil) -> ParlourctlInvocation {
        ParlourctlInvocation(action: .run(command), json: json, socket: socket)
    }

    private static func callback(_ command: ControlCommand, _ url: String, wait: Bool = true, json: Bool = false) -> ParlourctlInvocation {
        guard case .success(let callback) = CallbackURL.parse(url) else { fatalError("bad test URL \(url)") }
        return ParlourctlInvocation(action: .runWithCallback(command, callback: callback, wait: wait), json: json)
    }

    @Test("commands and global options are understood wherever the options stand", arguments: [
        (["status"], run(.status)),
        (["--json", "status"], run(.status, json: true)),
        (["status", "--json"], run(.status, json: true)),
        (["--socket", "/tmp/c.sock", "watch"], run(.watch, socket: "/tmp/c.sock")),
        (["watch", "--socket=/tmp/c.sock", "--json"], run(.watch, json: true, socket: "/tmp/c.sock")),
        (["--socket", "/a", "--socket", "/b", "cancel"], run(.cancel, socket: "/b")),
        (["listen"], run(.listen(hold: false))),
        (["listen", "--hold"], run(.listen(hold: true))),
        (["--json", "listen", "--hold"], run(.listen(hold: true), json: true)),
        (["cancel"], run(.cancel)),
        (["version"], run(.version)),
        (["ask", "what", "time", "is", "it?"], run(.ask(text: "what time is it?"))),
        (["ask", "  turn off  ", "the\tlights "], run(.ask(text: "turn off the lights"))),
        (["ask", "--json", "is it raining"], run(.ask(text: "is it raining"), json: true)),
        (["ask", "--", "-5", "degrees", "--json?"], run(.ask(text: "-5 degrees --json?"))),
        (["--version"], ParlourctlInvocation(action: .version)),
        (["servers", "--json"], run(.servers, json: true)),
        (["pair", "parlour://pair?url=http%3A%2F%2Fden.local%3A8765&token=abc"],
         ParlourctlInvocation(action: .pair(link: "parlour://pair?url=http%3A%2F%2Fden.local%3A8765&token=abc", yes: false))),
        (["pair", "--yes", "-"], ParlourctlInvocation(action: .pair(link: "-", yes: true))),
        (["use", "http://den.local:8765"], ParlourctlInvocation(action: .use(url: "http://den.local:8765", yes: false))),
        (["use", "--yes", "https://den.local:8443"], ParlourctlInvocation(action: .use(url: "https://den.local:8443", yes: true))),
        (["unpin"], run(.unpin)),
        (["token", "set"], ParlourctlInvocation(action: .setTokenFromInput)),
        (["token", "clear"], run(.tokenClear)),
        (["room"], run(.room(name: nil))),
        (["room", "study"], run(.room(name: "study"))),
        (["room", "  living room "], run(.room(name: "living room"))),
        (["room", ""], run(.room(name: ""))),
        (["room", "--reset"], run(.roomReset)),
        (["mute"], run(.mute)),
        (["unmute", "--json"], run(.unmute, json: true)),
        (["volume"], run(.volume(percent: nil))),
        (["volume", "40"], run(.volume(percent: 40))),
        (["volume", "0%"], run(.volume(percent: 0))),
        (["listen", "--callback", "http://h/cb?ctx=abc&n=1"], callback(.listen(hold: false), "http://h/cb?ctx=abc&n=1")),
        (["listen", "--hold", "--callback=https://h/cb"], callback(.listen(hold: true), "https://h/cb")),
        (["--json", "listen", "--no-wait", "--callback", "http://h/cb"], callback(.listen(hold: false), "http://h/cb", wait: false, json: true)),
        (["ask", "--callback", "http://h/cb", "what", "time"], callback(.ask(text: "what time"), "http://h/cb")),
        (["ask", "is", "it", "raining", "--no-wait", "--callback", "http://h/cb"], callback(.ask(text: "is it raining"), "http://h/cb", wait: false)),
        (["doctor"], run(.doctor)),
        (["doctor", "--json"], run(.doctor, json: true)),
        (["setup"], ParlourctlInvocation(action: .setup)),
    ])
    func understood(arguments: [String], expected: ParlourctlInvocation) {
        #expect(ParlourctlCommandLine.parse(arguments) == .success(expected))
    }

    @Test("bad command lines are usage errors that quote the offending word", arguments: [
        (["--jsno", "status"], "Error: Unknown option '--jsno'. Did you mean '--json'?\nSee 'parlourctl --help'."),
        (["status", "--hold"], "Error: Unknown option '--hold'.\nSee 'parlourctl status --help'."),
        (["--hold", "listen"], "Error: Unknown option '--hold'.\nSee 'parlourctl --help'."),
        (["listen", "--hodl"], "Error: Unknown option '--hodl'. Did you mean '--hold'?\nSee 'parlourctl listen --help'."),
        (["listen", "--hold=yes"], "Error: '--hold' takes no value.\nSee 'parlourctl listen --help'."),
        (["status", "--json=1"], "Error: '--json' takes no value.\nSee 'parlourctl status --help'."),
        (["status", "--socket"], "Error: Missing value for '--socket <path>'.\nSee 'parlourctl status --help'."),
        (["--socket", "--json", "status"], "Error: Missing value for '--socket <path>'.\nSee 'parlourctl --help'."),
        (["--socket=", "status"], "Error: Missing value for '--socket <path>'.\nSee 'parlourctl --help'."),
        (["stauts"], "Error: Unknown command 'stauts'. Did you mean 'status'?\nSee 'parlourctl --help'."),
        (["frobnicate", "now"], "Error: Unknown command 'frobnicate'.\nSee 'parlourctl --help'."),
        (["--json"], "Error: Missing expected argument '<subcommand>'.\nSee 'parlourctl --help'."),
        (["status", "now"], "Error: Unexpected argument 'now'.\nSee 'parlourctl status --help'."),
        (["listen", "hold"], "Error: Unexpected argument 'hold'.\nSee 'parlourctl listen --help'."),
        (["ask"], "Error: Missing expected argument '<text> ...'.\nSee 'parlourctl ask --help'."),
        (["ask", " ", "\t"], "Error: Missing expected argument '<text> ...'.\nSee 'parlourctl ask --help'."),
        (["ask", "-5", "degrees"], "Error: Unknown option '-5'.\nSee 'parlourctl ask --help'."),
        (["help", "stauts"], "Error: Unknown command 'stauts'. Did you mean 'status'?\nSee 'parlourctl --help'."),
        (["frobnicate", "--help"], "Error: Unknown command 'frobnicate'.\nSee 'parlourctl --help'."),
        (["--version=2"], "Error: '--version' takes no value.\nSee 'parlourctl --help'."),
        (["pair"], "Error: Missing expected argument '<link>'.\nSee 'parlourctl pair --help'."),
        (["listen", "--no-wait"],
         "Error: '--no-wait' needs '--callback <url>': without it the result would go nowhere.\nSee 'parlourctl listen --help'."),
        (["listen", "--hold", "--no-wait", "--callback", "http://h/cb"],
         "Error: '--no-wait' cannot go with '--hold': a held listen ends when parlourctl's standard input closes, "
            + "so parlourctl must stay.\nSee 'parlourctl listen --help'."),
        (["listen", "--callback"], "Error: Missing value for '--callback <url>'.\nSee 'parlourctl listen --help'."),
        (["listen", "--callback", "ftp://h/cb"],
         "Error: Invalid value for '--callback <url>': ftp://h/cb is not an http:// or https:// URL with a host "
            + "(and a port from 1 to 65535, if any).\nSee 'parlourctl listen --help'."),
        (["ask", "--callback", "http://me:secret@h/cb", "hi"],
         "Error: Invalid value for '--callback <url>': http://h/cb has a user name or password in it, and the satellite "
            + "sends no credentials with a callback; put what the receiver needs in the query.\nSee 'parlourctl ask --help'."),
        (["ask", "--callback", "http://h/cb?status=x", "hi"],
         "Error: Invalid value for '--callback <url>': http://h/cb already has \"status\" in its query, a name the "
            + "satellite adds (status, response, reason, error); choose another name for it.\nSee 'parlourctl ask --help'."),
        (["status", "--callback", "http://h/cb"], "Error: Unknown option '--callback'.\nSee 'parlourctl status --help'."),
        (["token"], "Error: Missing expected argument '<subcommand>' after 'token'.\nSee 'parlourctl --help'."),
        (["room", "den", "--reset"], "Error: Give a room or --reset, not both.\nSee 'parlourctl room --help'."),
        (["room", "a", "b"], "Error: Unexpected argument 'b'.\nSee 'parlourctl room --help'."),
        (["volume", "101"], "Error: The volume is a whole number from 0 to 100, not '101'.\nSee 'parlourctl volume --help'."),
        (["volume", "loud"], "Error: The volume is a whole number from 0 to 100, not 'loud'.\nSee 'parlourctl volume --help'."),
        (["mute", "now"], "Error: Unexpected argument 'now'.\nSee 'parlourctl mute --help'."),
        // The argument is probably the token: the refusal does not quote it.
        (["doctor", "now"], "Error: Unexpected argument 'now'.\nSee 'parlourctl doctor --help'."),
        (["token", "set", "s3cret-token"],
         "Error: token set takes no argument: the token would show in the process list. "
            + "Give it on standard input: parlourctl token set < FILE.\nSee 'parlourctl token set --help'."),
    ])
    func usageErrors(arguments: [String], message: String) throws {
        let result = ParlourctlCommandLine.parse(arguments)
        guard case .failure(let error) = result else {
            Issue.record("\(arguments) was accepted as \(result)")
            return
        }
        #expect(error.description == message)
    }

    @Test("usage errors exit 2")
    func exitCode() {
        #expect(UsageError.exitCode == 2)
    }

    @Test("with no arguments, and with --help or -h anywhere, parlourctl shows the top-level help", arguments: [
        [], ["--help"], ["-h"], ["help"], ["--json", "-h"], ["--bogus", "--help"],
    ])
    func topLevelHelp(arguments: [String]) {
        #expect(ParlourctlCommandLine.parse(arguments).map(\.action) == .success(.help(ParlourctlCommandLine.helpText)))
    }

    @Test("--help after a command, or help before it, shows that command's help", arguments: [
        "status", "watch", "listen", "cancel", "ask", "version",
    ])
    func commandHelp(command: String) throws {
        let text = try #require(ParlourctlCommandLine.helpText(for: command))
        for arguments in [[command, "--help"], ["-h", command], ["help", command], [command, "--hold", "extra", "-h"]] {
            #expect(ParlourctlCommandLine.parse(arguments).map(\.action) == .success(.help(text)))
        }
    }

    @Test("the top-level help lists every command in one sentence each")
    func topLevelHelpText() {
        #expect(ParlourctlCommandLine.helpText == """
            OVERVIEW: Control the Parlour satellite on this machine.

            parlourctl talks only to the parlour-satellite daemon, through its control
            socket; it holds no secret and never contacts the server itself. It exits 0
            when the command completed, 1 on an error, 2 on a usage error, 3 when the
            command was cancelled and 4 when the daemon could not be reached.

            USAGE: parlourctl [--json] [--socket <path>] <subcommand>

            OPTIONS:
              --json                  Print the result as JSON.
              --socket <path>         Talk to the daemon through this socket.
              --version               Show the version.
              -h, --help              Show help information.

            SUBCOMMANDS:
              status                  Print the state of the satellite and its server.
              setup                   Walk through setting the satellite up, step by step.
              doctor                  Check what the satellite needs, and how to fix it.
              watch                   Print events as they happen until interrupted.
              listen                  Listen now and print what was heard and the reply.
              cancel                  Stop the capture or the playback under way.
              ask                     Ask a question in words and print the reply.
              servers                 List the Parlour servers found, the pinned one marked.
              pair                    Pair with a server using the link parlour pair prints.
              use                     Pin a server by hand; the token stays as it is.
              unpin                   Forget the pinned server and look for one again.
              token set               Store the token read from standard input.
              token clear             Remove the stored token.
              room                    Print the room, or set it from the next request on.
              mute                    Close the microphone until unmute, over restarts too.
              unmute                  Let the microphone open again.
              volume                  Print the speaker's volume, or set it from 0 to 100.
              server status           Print the pinned server's own status.
              server start            Start one of the server's model servers.
              server stop             Stop one of the server's model servers.
              server restart          Restart one of the server's model servers.
              server pipeline         Change the server's pipeline settings.
              server doctor           Run the server's own checks.
              server logs             Print the last lines of one of the server's logs.
              server restart-agent    Restart the server's agent.
              version                 Print the versions of both programs and the protocol.

              See 'parlourctl help <subcommand>' for detailed help.
            """)
    }

    @Test("each command's help is exactly as documented", arguments: [
        ("status", """
            OVERVIEW: Print the state of the satellite and its server.

            USAGE: parlourctl status [--json] [--socket <path>]

            OPTIONS:
              --json                  Print the result as JSON.
              --socket <path>         Talk to the daemon through this socket.
              -h, --help              Show help information.
            """),
        ("watch", """
            OVERVIEW: Print events as they happen until interrupted.

            With --json, each event is one JSON object on a line of its own.

            USAGE: parlourctl watch [--json] [--socket <path>]

            OPTIONS:
              --json                  Print the result as JSON.
              --socket <path>         Talk to the daemon through this socket.
              -h, --help              Show help information.
            """),
        ("listen", """
            OVERVIEW: Listen now and print what was heard and the reply.

            Listening ends on silence, or with --hold when standard input closes.

            With --callback, the satellite itself requests the URL when the request
            ends, even when parlourctl is gone; its query gets status=completed and
            response=<base64url JSON>, status=cancelled and reason=<reason>, or
            status=error and error=<code> added. With --no-wait, parlourctl exits 0 as
            soon as the satellite has accepted the request, and only the callback gets
            the result.

            USAGE: parlourctl listen [--hold] [--callback <url>] [--no-wait] [--json]
                   [--socket <path>]

            OPTIONS:
              --hold                  Keep listening until standard input closes.
              --callback <url>        Also send the result to this http(s) URL.
              --no-wait               Return at once; only the callback gets the result.
              --json                  Print the result as JSON.
              --socket <path>         Talk to the daemon through this socket.
              -h, --help              Show help information.
            """),
        ("cancel", """
            OVERVIEW: Stop the capture or the playback under way.

            USAGE: parlourctl cancel [--json] [--socket <path>]

            OPTIONS:
              --json                  Print the result as JSON.
              --socket <path>         Talk to the daemon through this socket.
              -h, --help              Show help information.
            """),
        ("ask", """
            OVERVIEW: Ask a question in words and print the reply.

            Put -- before a question that starts with a dash.

            With --callback, the satellite itself requests the URL when the request
            ends, even when parlourctl is gone; its query gets status=completed and
            response=<base64url JSON>, status=cancelled and reason=<reason>, or
            status=error and error=<code> added. With --no-wait, parlourctl exits 0 as
            soon as the satellite has accepted the request, and only the callback gets
            the result.

            USAGE: parlourctl ask [--callback <url>] [--no-wait] [--json] [--socket <path>]
                   <text> ...

            ARGUMENTS:
              <text>                  The question; its words are joined with spaces.

            OPTIONS:
              --callback <url>        Also send the result to this http(s) URL.
              --no-wait               Return at once; only the callback gets the result.
              --json                  Print the result as JSON.
              --socket <path>         Talk to the daemon through this socket.
              -h, --help              Show help information.
            """),
        ("doctor", """
            OVERVIEW: Check what the satellite needs, and how to fix it.

            Checks, in this order: microphone, speaker, audio_group, avahi,
            server_seen, server_pinned, token, clock, state_folder, socket,
            wake_word_library, wake_word_model (these two with wake local),
            arbitration_port, sibling_claims (these two with arbitration on). Each
            is ok, warn or fail, with what was found and the command that fixes it.
            Exits 1 when any check failed, else 0.

            USAGE: parlourctl doctor [--json] [--socket <path>]

            OPTIONS:
              --json                  Print the result as JSON.
              --socket <path>         Talk to the daemon through this socket.
              -h, --help              Show help information.
            """),
        ("version", """
            OVERVIEW: Print the versions of both programs and the protocol.

            USAGE: parlourctl version [--json] [--socket <path>]

            OPTIONS:
              --json                  Print the result as JSON.
              --socket <path>         Talk to the daemon through this socket.
              -h, --help              Show help information.
            """),
        ("server stop", """
            OVERVIEW: Stop one of the server's model servers.

            The house cannot answer the same way without it, so this asks first on
            a terminal; --yes skips the question, and without a terminal --yes is
            needed.

            USAGE: parlourctl server stop [--yes] [--json] [--socket <path>] <name>

            ARGUMENTS:
              <name>                  The model server: llm or whisper.

            OPTIONS:
              --yes                   Stop without asking to confirm.
              --json                  Print the result as JSON.
              --socket <path>         Talk to the daemon through this socket.
              -h, --help              Show help information.
            """),
        ("help", """
            OVERVIEW: Show help for a subcommand.

            USAGE: parlourctl help [<subcommand> ...]

            ARGUMENTS:
              <subcommand>            The subcommand to explain.

            OPTIONS:
              -h, --help              Show help information.
            """),
    ])
    func commandHelpText(command: String, text: String) {
        #expect(ParlourctlCommandLine.helpText(for: command) == text)
    }

    @Test("every command in the table has help, and no help line is wider than 80 columns")
    func helpFits() throws {
        let texts = [ParlourctlCommandLine.helpText, DaemonCommandLine.helpText]
            + ParlourctlCommandLine.commands.map(ParlourctlCommandLine.helpText(for:))
        for text in texts {
            for line in text.split(separator: "\n") { #expect(line.count <= 80, "\(line)") }
        }
        #expect(ParlourctlCommandLine.helpText(for: "nope") == nil)
    }

    @Test("every command parlourctl sends is one the daemon takes")
    func commandsExist() {
        // setup is a walk that sends other commands (SetupFlowTests).
        for spec in ParlourctlCommandLine.commands where !spec.meta && spec.name != "setup" {
            #expect(ControlCommand.names.contains(spec.name))
        }
    }
}

@Suite("daemon command line")
struct DaemonCommandLineTests {
    @Test("the three paths are taken in either form, and the last of a repeated option wins", arguments: [
        ([], [:]),
        (["--config", "/c.json"], ["config": "/c.json"]),
        (["--config=/c.json", "--state-dir", "/s", "--socket=/x.sock"],
         ["config": "/c.json", "state-dir": "/s", "socket": "/x.sock"]),
        (["--socket", "/a", "--socket", "/b"], ["socket": "/b"]),
    ] as [([String], [String: String])])
    func understood(arguments: [String], options: [String: String]) {
        #expect(DaemonCommandLine.parse(arguments) == .success(.run(options: options)))
    }

    @Test("the options feed the path resolution under their own names")
    func feedsPaths() throws {
        guard case .success(.run(let options)) = DaemonCommandLine.parse(["--state-dir", "/s"]) else {
            Issue.record("not a run")
            return
        }
        #expect(SatellitePaths.resolve(options: options, environment: ["STATE_DIRECTORY": "/sd"]).stateDirectory == "/s")
    }

    @Test("help and version", arguments: [
        (["--help"], DaemonInvocation.help(DaemonCommandLine.helpText)),
        (["-h", "--config", "/c"], .help(DaemonCommandLine.helpText)),
        (["--bogus", "-h"], .help(DaemonCommandLine.helpText)),
        (["--version"], .version("parlour-satellite 0.1.0 (Parlour protocol 1)")),
    ])
    func helpAndVersion(arguments: [String], expected: DaemonInvocation) {
        #expect(DaemonCommandLine.parse(arguments) == .success(expected))
    }

    @Test("bad command lines are usage errors that quote the offending word", arguments: [
        (["--conifg", "/c.json"], "Error: Unknown option '--conifg'. Did you mean '--config'?\nSee 'parlour-satellite --help'."),
        (["--config"], "Error: Missing value for '--config <path>'.\nSee 'parlour-satellite --help'."),
        (["--config", "--socket", "/x"], "Error: Missing value for '--config <path>'.\nSee 'parlour-satellite --help'."),
        (["--state-dir="], "Error: Missing value for '--state-dir <dir>'.\nSee 'parlour-satellite --help'."),
        (["run"], "Error: Unexpected argument 'run'.\nSee 'parlour-satellite --help'."),
        (["--version=1"], "Error: '--version' takes no value.\nSee 'parlour-satellite --help'."),
    ])
    func usageErrors(arguments: [String], message: String) {
        guard case .failure(let error) = DaemonCommandLine.parse(arguments) else {
            Issue.record("\(arguments) was accepted")
            return
        }
        #expect(error.description == message)
    }

    @Test("the help is exactly as documented")
    func helpText() {
        #expect(DaemonCommandLine.helpText == """
            OVERVIEW: Run the Parlour satellite in the foreground.

            systemd supervises it; it stops cleanly on SIGTERM or SIGINT. Without
            options it reads /etc/parlour-satellite/satellite.json (or
            $PARLOUR_SATELLITE_CONFIG), keeps its state in /var/lib/parlour-satellite
            (or $STATE_DIRECTORY, else $PARLOUR_SATELLITE_STATE) and listens on
            /run/parlour-satellite/control.sock (or $PARLOUR_SATELLITE_SOCKET, else
            $RUNTIME_DIRECTORY/control.sock).

            USAGE: parlour-satellite [--config <path>] [--state-dir <dir>] [--socket <path>]

            OPTIONS:
              --config <path>         Read the settings from this file.
              --state-dir <dir>       Keep the token and the pinned server in this folder.
              --socket <path>         Listen for parlourctl on this socket.
              --version               Show the version.
              -h, --help              Show help information.
            """)
    }
}
