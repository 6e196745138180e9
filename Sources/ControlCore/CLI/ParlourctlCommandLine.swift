// parlourctl's command line as a pure function from words to an invocation,
// driven by the command table below. Global options (--json, --socket, --help)
// may come anywhere, as people type them at the end; `--` ends the options so a
// question may start with a dash.

/// What parlourctl was asked to do, and how.
public struct ParlourctlInvocation: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        /// Print this text and exit 0.
        case help(String)
        /// Send this command to the daemon.
        case run(ControlCommand)
        /// Send this command with a callback URL; without `wait`, return once the daemon accepts it.
        case runWithCallback(ControlCommand, callback: CallbackURL, wait: Bool)
        /// Print parlourctl's own version (`--version`) without asking the daemon.
        case version
        /// Show the link's server and ask to confirm (unless `yes`), then send `pair`. A link
        /// of `-` is read from standard input, which keeps the token out of the process list.
        case pair(link: String, yes: Bool)
        /// Send `use`; an https key nobody vouches for is shown and asked about (unless `yes`).
        case use(url: String, yes: Bool)
        /// Read the token from standard input, then send `token set`.
        case setTokenFromInput
        /// Ask on the terminal before stopping a model server (unless `yes`), then send `server stop`.
        case stopService(name: String, yes: Bool)
        /// Walk through setup on the terminal (SetupFlow), sending a request at each step.
        case setup
    }

    public var action: Action
    /// Print the result object instead of a sentence.
    public var json: Bool
    /// The control socket named with `--socket`; nil leaves it to `SatellitePaths.resolve`.
    public var socket: String?

    public init(action: Action, json: Bool = false, socket: String? = nil) {
        self.action = action
        self.json = json
        self.socket = socket
    }
}

/// Parses `parlourctl`'s arguments (without the program name).
public enum ParlourctlCommandLine {
    public static let program = "parlourctl"
    public static let versionText = "\(program) \(SatelliteVersion.satellite) (Parlour protocol \(SatelliteVersion.parlourProtocol))"

    static let globalOptions = [
        OptionSpec("--json", help: "Print the result as JSON."),
        OptionSpec("--socket", value: "<path>", help: "Talk to the daemon through this socket."),
    ]

    static let serviceArgument = ArgumentSpec("<name>", .one, help: "The model server: llm or whisper.")

    /// Every command, in the order help lists them.
    static let commands: [CommandSpec] = [
        CommandSpec(name: "status", abstract: "Print the state of the satellite and its server.") { _ in .run(.status) },
        CommandSpec(name: "setup", abstract: "Walk through setting the satellite up, step by step.",
                    discussion: """
                        Four steps, as in the Parlour app: Connect (pair with a server), Voice
                        (watch the microphone hear you, and choose the room), Extras, and Finish
                        (what was set). Run it again any time: Enter keeps what is set. It needs
                        a terminal; without one, use parlourctl pair - and parlourctl room NAME.
                        """) { _ in .setup },
        CommandSpec(name: "doctor", abstract: "Check what the satellite needs, and how to fix it.",
                    discussion: """
                        Checks, in this order: microphone, speaker, audio_group, avahi,
                        server_seen, server_pinned, token, clock, state_folder, socket,
                        wake_word_library, wake_word_model (these two with wake local),
                        arbitration_port, sibling_claims (these two with arbitration on). Each
                        is ok, warn or fail, with what was found and the command that fixes it.
                        Exits 1 when any check failed, else 0.
                        """) { _ in .run(.doctor) },
        CommandSpec(name: "watch", abstract: "Print events as they happen until interrupted.",
                    discussion: "With --json, each event is one JSON object on a line of its own.") { _ in .run(.watch) },
        CommandSpec(name: "listen", abstract: "Listen now and print what was heard and the reply.",
                    discussion: """
                        Listening ends on silence, or with --hold when standard input closes.
                        \(callbackDiscussion)
                        """,
                    options: [OptionSpec("--hold", help: "Keep listening until standard input closes.")] + callbackOptions) {
            command throws(UsageError) in
            let hold = command.flags.contains("--hold")
            if hold && command.flags.contains("--no-wait") {
                throw command.usageError("'--no-wait' cannot go with '--hold': a held listen ends when parlourctl's "
                    + "standard input closes, so parlourctl must stay.")
            }
            return try withCallback(.listen(hold: hold), command)
        },
        CommandSpec(name: "cancel", abstract: "Stop the capture or the playback under way.") { _ in .run(.cancel) },
        CommandSpec(name: "ask", abstract: "Ask a question in words and print the reply.",
                    discussion: """
                        Put -- before a question that starts with a dash.
                        \(callbackDiscussion)
                        """,
                    arguments: [ArgumentSpec("<text>", .oneOrMore, help: "The question; its words are joined with spaces.")],
                    options: callbackOptions) {
            command throws(UsageError) in
            let text = command.arguments.flatMap { $0.split(whereSeparator: \.isWhitespace) }.joined(separator: " ")
            guard !text.isEmpty else { throw command.usageError("Missing expected argument '<text> ...'.") }
            return try withCallback(.ask(text: text), command)
        },
        CommandSpec(name: "servers", abstract: "List the Parlour servers found, the pinned one marked.") { _ in
            .run(.servers)
        },
        CommandSpec(name: "pair", abstract: "Pair with a server using the link parlour pair prints.",
                    discussion: """
                        Shows the server's name and the address everything said here would go
                        to, and asks to confirm; then the satellite checks /health and
                        /v1/models, stores the token and pins the server. The link holds the
                        token: give - to read it from standard input, which keeps it out of
                        the process list. An https server whose certificate no authority
                        vouches for shows the SHA-256 of its public key and is asked about
                        (--yes takes it); the key is pinned either way.
                        """,
                    arguments: [ArgumentSpec("<link>", .one, help: "The pairing link, or - to read it from stdin.")],
                    options: [OptionSpec("--yes", help: "Pair without asking; trust the https key shown.")]) { command in
            .pair(link: command.arguments[0], yes: command.flags.contains("--yes"))
        },
        CommandSpec(name: "use", abstract: "Pin a server by hand; the token stays as it is.",
                    discussion: """
                        On the server in use (the same scheme, host and port), or with
                        nothing pinned, the token goes with it: the server is pinned only when
                        /health answers and /v1/models accepts the token. Anywhere else the
                        token stays behind with its own server: only /health is checked, and
                        the new server gets a token by pair or token set. An https server
                        whose certificate no authority vouches for shows the SHA-256 of its
                        public key and is asked about; the key is pinned either way.
                        """,
                    arguments: [ArgumentSpec("<url>", .one, help: "The server's address, such as http://den.local:8765.")],
                    options: [OptionSpec("--yes", help: "Trust the https key shown without asking.")]) {
            command in .use(url: command.arguments[0], yes: command.flags.contains("--yes"))
        },
        CommandSpec(name: "unpin", abstract: "Forget the pinned server and look for one again.") { _ in .run(.unpin) },
        CommandSpec(name: "token set", abstract: "Store the token read from standard input.",
                    discussion: """
                        The token is never taken from the command line, where the process list
                        would show it: parlourctl token set < FILE, or type it and press Ctrl-D.
                        """,
                    refusesArguments: "token set takes no argument: the token would show in the process list. "
                        + "Give it on standard input: parlourctl token set < FILE.") { _ in .setTokenFromInput },
        CommandSpec(name: "token clear", abstract: "Remove the stored token.") { _ in .run(.tokenClear) },
        CommandSpec(name: "room", abstract: "Print the room, or set it from the next request on.",
                    discussion: """
                        The room is sent with every request, so the server knows where it was
                        asked. A room set here outlives a restart and wins over the config's
                        room until that is edited, or until --reset; "" sets no room.
                        """,
                    arguments: [ArgumentSpec("<name>", .optional, help: "The room, such as kitchen; none prints it.")],
                    options: [OptionSpec("--reset", help: "Use the config's room again.")]) { command throws(UsageError) in
            let reset = command.flags.contains("--reset")
            guard let text = command.arguments.first else { return .run(reset ? .roomReset : .room(name: nil)) }
            if reset { throw command.usageError("Give a room or --reset, not both.") }
            guard let name = RoomName.clean(text) else {
                throw command.usageError("A room has at most 40 characters and no control characters; '\(text.prefix(60))' is not one.")
            }
            return .run(.room(name: name))
        },
        CommandSpec(name: "mute", abstract: "Close the microphone until unmute, over restarts too.",
                    discussion: """
                        The microphone is released (another program may open it) and nothing is
                        streamed or recorded. An answer already on its way still plays.
                        """) { _ in .run(.mute) },
        CommandSpec(name: "unmute", abstract: "Let the microphone open again.") { _ in .run(.unmute) },
        CommandSpec(name: "volume", abstract: "Print the speaker's volume, or set it from 0 to 100.",
                    discussion: """
                        The volume is the ALSA mixer control audio.mixer on the card of
                        audio.output (or audio.mixerCard), as a percentage of its range.
                        """,
                    arguments: [ArgumentSpec("<percent>", .optional, help: "The volume from 0 to 100; none prints it.")]) {
            command throws(UsageError) in
            guard let text = command.arguments.first else { return .run(.volume(percent: nil)) }
            let digits = text.hasSuffix("%") ? String(text.dropLast()) : text
            guard let percent = Int(digits), (0...100).contains(percent) else {
                throw command.usageError("The volume is a whole number from 0 to 100, not '\(text.prefix(60))'.")
            }
            return .run(.volume(percent: percent))
        },
        CommandSpec(name: "server status", abstract: "Print the pinned server's own status.",
                    discussion: """
                        Its version, whether its agent restarts by itself, the pipeline in force
                        and the one saved, each model server, and its memory. Every server
                        command goes through the satellite to the pinned server only, with the
                        token, over the server's /admin routes.
                        """) { _ in .run(.serverStatus) },
        CommandSpec(name: "server start", abstract: "Start one of the server's model servers.",
                    discussion: "Loading a model can take up to a minute; the satellite waits for it.",
                    arguments: [serviceArgument]) { command in
            .run(.serverService(name: command.arguments[0], action: .start))
        },
        CommandSpec(name: "server stop", abstract: "Stop one of the server's model servers.",
                    discussion: """
                        The house cannot answer the same way without it, so this asks first on
                        a terminal; --yes skips the question, and without a terminal --yes is
                        needed.
                        """,
                    arguments: [serviceArgument],
                    options: [OptionSpec("--yes", help: "Stop without asking to confirm.")]) { command in
            .stopService(name: command.arguments[0], yes: command.flags.contains("--yes"))
        },
        CommandSpec(name: "server restart", abstract: "Restart one of the server's model servers.",
                    discussion: "Loading a model can take up to a minute; the satellite waits for it.",
                    arguments: [serviceArgument]) { command in
            .run(.serverService(name: command.arguments[0], action: .restart))
        },
        CommandSpec(name: "server pipeline", abstract: "Change the server's pipeline settings.",
                    discussion: """
                        Only the settings that differ from the server's saved ones are sent. A
                        value outside the server's bounds is refused before anything is sent.
                        The server restarts its agent to use them when it can.
                        """,
                    options: [
                        OptionSpec("--concurrency", value: "<n>", help: "Run this many requests at once across the house (1-4)."),
                        OptionSpec("--queue-depth", value: "<n>", help: "Let this many requests wait per room (1-10)."),
                        OptionSpec("--max-tasks", value: "<n>", help: "Split a request into at most this many tasks (1-10)."),
                        OptionSpec("--timeout", value: "<seconds>", help: "Give up on a request after this many seconds (5-300)."),
                        OptionSpec("--triage", value: "<when>", help: "Read requests first: auto, always or never."),
                    ]) { command throws(UsageError) in
            var change = PipelineChange()
            for setting in PipelineSetting.allCases {
                guard let text = command.values[setting.option] else { continue }
                guard let value = setting.parse(option: text), change.set(setting, value) else {
                    throw command.usageError("'\(setting.option)' must be \(setting.expectedOption) (the server's bounds), not '\(text)'.")
                }
            }
            guard !change.isEmpty else {
                throw command.usageError("Give at least one setting to change: "
                    + PipelineSetting.allCases.map(\.option).joined(separator: ", ") + ".")
            }
            return .run(.serverPipeline(change))
        },
        CommandSpec(name: "server doctor", abstract: "Run the server's own checks.",
                    discussion: "The checks can take up to a minute; the satellite waits for them.") { _ in .run(.serverDoctor) },
        CommandSpec(name: "server logs", abstract: "Print the last lines of one of the server's logs.",
                    arguments: [ArgumentSpec("<log>", .one, help: "agent, llm or whisper.")],
                    options: [OptionSpec("--lines", value: "<n>", help: "Print this many lines (1-200; 50 if not given).")]) {
            command throws(UsageError) in
            var lines: Int?
            if let text = command.values["--lines"] {
                guard let count = Int(text), count >= 1 else {
                    throw command.usageError("'--lines' must be a whole number of at least 1, not '\(text)'.")
                }
                lines = count
            }
            return .run(.serverLogs(service: command.arguments[0], lines: lines))
        },
        CommandSpec(name: "server restart-agent", abstract: "Restart the server's agent.",
                    discussion: "The house stops answering for a few seconds while it starts again.") { _ in
            .run(.serverRestartAgent)
        },
        CommandSpec(name: "version", abstract: "Print the versions of both programs and the protocol.") { _ in
            .run(.version)
        },
        CommandSpec(name: "help", abstract: "Show help for a subcommand.",
                    arguments: [ArgumentSpec("<subcommand>", .any, help: "The subcommand to explain.")], meta: true) {
            command throws(UsageError) in
            guard !command.arguments.isEmpty else { return .help(helpText) }
            let name = command.arguments.joined(separator: " ")
            guard let text = helpText(for: name) else { throw unknownCommand(name) }
            return .help(text)
        },
    ]

    /// The options of the two commands whose result may go to a callback.
    static let callbackOptions = [
        OptionSpec("--callback", value: "<url>", help: "Also send the result to this http(s) URL."),
        OptionSpec("--no-wait", help: "Return at once; only the callback gets the result."),
    ]

    static let callbackDiscussion = """

        With --callback, the satellite itself requests the URL when the request
        ends, even when parlourctl is gone; its query gets status=completed and
        response=<base64url JSON>, status=cancelled and reason=<reason>, or
        status=error and error=<code> added. With --no-wait, parlourctl exits 0 as
        soon as the satellite has accepted the request, and only the callback gets
        the result.
        """

    /// `command` as it goes with the callback options of `parsed` (none, `--callback`, `--no-wait`).
    static func withCallback(_ command: ControlCommand, _ parsed: ParsedCommand) throws(UsageError) -> ParlourctlInvocation.Action {
        let wait = !parsed.flags.contains("--no-wait")
        guard let text = parsed.values["--callback"] else {
            if !wait { throw parsed.usageError("'--no-wait' needs '--callback <url>': without it the result would go nowhere.") }
            return .run(command)
        }
        switch CallbackURL.parse(text) {
        case .success(let url):
            return .runWithCallback(command, callback: url, wait: wait)
        case .failure:
            let problem = CallbackURL.problem(with: text) ?? "is not a callback URL"
            throw parsed.usageError("Invalid value for '--callback <url>': \(ServerAddress.displayURL(text)) \(problem).")
        }
    }

    public static func parse(_ arguments: [String]) -> Result<ParlourctlInvocation, UsageError> {
        var cursor = ArgumentCursor(arguments)
        var json = false, socket: String?, wantsHelp = false, wantsVersion = false
        var commandWords: [String] = []
        var command: CommandSpec?
        var unknown = false
        var words: [String] = [], flags: Set<String> = [], values: [String: String] = [:]
        var firstError: UsageError?
        func fail(_ message: String) {
            if firstError == nil { firstError = UsageError(message, helpCommand: helpCommand(command)) }
        }

        while let token = cursor.next() {
            switch token {
            case .word(let word):
                if command != nil || unknown { words.append(word); continue }
                commandWords.append(word)
                let name = commandWords.joined(separator: " ")
                if let spec = commands.first(where: { $0.name == name }) {
                    command = spec
                } else if !commands.contains(where: { $0.name.hasPrefix(name + " ") }) {
                    unknown = true
                    if firstError == nil { firstError = unknownCommand(name) }
                }
            case .option(let name, let inline):
                if ["--help", "-h", "--version"].contains(name) {
                    if inline != nil { fail("'\(name)' takes no value.") }
                    if name == "--version" { wantsVersion = true } else { wantsHelp = true }
                    continue
                }
                let known = globalOptions + (command?.options ?? [])
                guard let option = known.first(where: { $0.name == name }) else {
                    // --help and --version are not offered: "--hold" is no typo of "--help".
                    fail("Unknown option '\(name)'." + Suggestion.didYouMean(name, among: known.map(\.name)))
                    continue
                }
                if option.value == nil {
                    if inline != nil { fail("'\(name)' takes no value.") }
                    if name == "--json" { json = true } else { flags.insert(name) }
                } else if let value = cursor.value(inline: inline) {
                    if name == "--socket" { socket = value } else { values[name] = value }
                } else {
                    fail("Missing value for '\(option.label)'.")
                }
            }
        }

        func invocation(_ action: ParlourctlInvocation.Action) -> Result<ParlourctlInvocation, UsageError> {
            .success(ParlourctlInvocation(action: action, json: json, socket: socket))
        }
        // Help wins over mistakes elsewhere on the line: it is what a confused person types.
        if wantsHelp && !unknown { return invocation(.help(command.map(helpText(for:)) ?? helpText)) }
        if let firstError { return .failure(firstError) }
        if wantsVersion { return invocation(.version) }
        guard let command else {
            if arguments.isEmpty { return invocation(.help(helpText)) }
            let after = commandWords.isEmpty ? "" : " after '\(commandWords.joined(separator: " "))'"
            return .failure(UsageError("Missing expected argument '<subcommand>'\(after).", helpCommand: program))
        }
        let parsed = ParsedCommand(command: command.name, arguments: words, flags: flags, values: values)
        // Said without quoting the argument, which is probably a secret.
        if let refusal = command.refusesArguments, !words.isEmpty { return .failure(parsed.usageError(refusal)) }
        do {
            try checkCount(of: parsed, against: command.arguments)
            return invocation(try command.make(parsed))
        } catch {
            return .failure(error)
        }
    }

    /// The top-level help.
    public static var helpText: String {
        HelpText(
            overview: "Control the Parlour satellite on this machine.",
            discussion: """
                parlourctl talks only to the parlour-satellite daemon, through its control
                socket; it holds no secret and never contacts the server itself. It exits 0
                when the command completed, 1 on an error, 2 on a usage error, 3 when the
                command was cancelled and 4 when the daemon could not be reached.
                """,
            usage: ([program] + globalOptions.map(\.usage) + ["<subcommand>"]).joined(separator: " "),
            options: globalOptions.map { ($0.label, $0.help) } + [StandardOptions.version, StandardOptions.help],
            subcommands: commands.filter { !$0.meta }.map { ($0.name, $0.abstract) },
            footer: "See '\(program) help <subcommand>' for detailed help."
        ).text
    }

    /// One command's help, or nil when there is no such command.
    public static func helpText(for command: String) -> String? {
        commands.first { $0.name == command }.map(helpText(for:))
    }

    static func helpText(for command: CommandSpec) -> String {
        let options = command.options + (command.meta ? [] : globalOptions)
        return HelpText(
            overview: command.abstract,
            discussion: command.discussion,
            usage: ([program, command.name] + options.map(\.usage) + command.arguments.map(\.usage)).joined(separator: " "),
            arguments: command.arguments.map { ($0.name, $0.help) },
            options: options.map { ($0.label, $0.help) } + [StandardOptions.help]
        ).text
    }

    private static func checkCount(of parsed: ParsedCommand, against arguments: [ArgumentSpec]) throws(UsageError) {
        var remaining = parsed.arguments[...]
        for argument in arguments {
            switch argument.count {
            case .one, .oneOrMore:
                guard remaining.popFirst() != nil else {
                    throw parsed.usageError("Missing expected argument '\(argument.usage)'.")
                }
                if argument.count == .oneOrMore { remaining.removeAll() }
            case .optional: _ = remaining.popFirst()
            case .any: remaining.removeAll()
            }
        }
        if let extra = remaining.first { throw parsed.usageError("Unexpected argument '\(extra)'.") }
    }

    private static func helpCommand(_ command: CommandSpec?) -> String {
        command.map { "\(program) \($0.name)" } ?? program
    }

    private static func unknownCommand(_ name: String) -> UsageError {
        let names = commands.map(\.name)
        return UsageError("Unknown command '\(name)'." + Suggestion.didYouMean(name, among: names), helpCommand: program)
    }
}
