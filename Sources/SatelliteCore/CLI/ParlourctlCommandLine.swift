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
        /// Print parlourctl's own version (`--version`) without asking the daemon.
        case version
        /// Show the link's server and ask to confirm (unless `yes`), then send `pair`. A link
        /// of `-` is read from standard input, which keeps the token out of the process list.
        case pair(link: String, yes: Bool)
        /// Read the token from standard input, then send `token set`.
        case setTokenFromInput
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

    /// Every command, in the order help lists them.
    static let commands: [CommandSpec] = [
        CommandSpec(name: "status", abstract: "Print the state of the satellite and its server.") { _ in .run(.status) },
        CommandSpec(name: "watch", abstract: "Print events as they happen until interrupted.",
                    discussion: "With --json, each event is one JSON object on a line of its own.") { _ in .run(.watch) },
        CommandSpec(name: "listen", abstract: "Listen now and print what was heard and the reply.",
                    discussion: "Listening ends on silence, or with --hold when standard input closes.",
                    options: [OptionSpec("--hold", help: "Keep listening until standard input closes.")]) { command in
            .run(.listen(hold: command.flags.contains("--hold")))
        },
        CommandSpec(name: "cancel", abstract: "Stop the capture or the playback under way.") { _ in .run(.cancel) },
        CommandSpec(name: "ask", abstract: "Ask a question in words and print the reply.",
                    discussion: "Put -- before a question that starts with a dash.",
                    arguments: [ArgumentSpec("<text>", .oneOrMore, help: "The question; its words are joined with spaces.")]) {
            command throws(UsageError) in
            let text = command.arguments.flatMap { $0.split(whereSeparator: \.isWhitespace) }.joined(separator: " ")
            guard !text.isEmpty else { throw command.usageError("Missing expected argument '<text> ...'.") }
            return .run(.ask(text: text))
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
                        the process list.
                        """,
                    arguments: [ArgumentSpec("<link>", .one, help: "The pairing link, or - to read it from stdin.")],
                    options: [OptionSpec("--yes", help: "Pair without asking to confirm.")]) { command in
            .pair(link: command.arguments[0], yes: command.flags.contains("--yes"))
        },
        CommandSpec(name: "use", abstract: "Pin a server by hand; the token stays as it is.",
                    discussion: """
                        The server is pinned only when /health answers and /v1/models accepts
                        the token.
                        """,
                    arguments: [ArgumentSpec("<url>", .one, help: "The server's address, such as http://den.local:8765.")]) {
            command in .run(.use(url: command.arguments[0]))
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
            guard let name = LocalSettings.roomName(text) else {
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
