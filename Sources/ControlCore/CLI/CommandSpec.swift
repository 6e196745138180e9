// A row of parlourctl's command table. Parsing, usage lines and help are all
// derived from these rows, so a new command is one row and cannot be listed
// in help yet missing from the parser (or the other way round).

/// A subcommand of parlourctl.
struct CommandSpec: Sendable {
    /// As typed; two words for a command inside a group, such as `token set`. A group's own name
    /// (`token`) must not also be a command.
    let name: String
    /// One imperative sentence, shown in the list of subcommands and as the command's overview.
    let abstract: String
    /// Paragraphs for the command's own help, wrapped to 80 columns.
    var discussion: String? = nil
    var arguments: [ArgumentSpec] = []
    var options: [OptionSpec] = []
    /// True for `help`: about parlourctl itself, so it is not listed among the subcommands (the
    /// footer of the top-level help names it) and its help leaves out the options for the daemon.
    var meta = false
    /// When set, any argument is refused with this sentence, which must not quote it (`token set`:
    /// an argument there is probably the token).
    var refusesArguments: String? = nil
    /// Builds the action from a command line whose options and argument count are already checked.
    let make: @Sendable (ParsedCommand) throws(UsageError) -> ParlourctlInvocation.Action
}

/// A positional argument of a command.
struct ArgumentSpec: Sendable {
    enum Count: Sendable { case one, optional, oneOrMore, any }

    /// The placeholder, such as `<text>`.
    let name: String
    let count: Count
    /// One sentence.
    let help: String

    init(_ name: String, _ count: Count, help: String) {
        self.name = name
        self.count = count
        self.help = help
    }

    var usage: String {
        switch count {
        case .one: name
        case .optional: "[\(name)]"
        case .oneOrMore: "\(name) ..."
        case .any: "[\(name) ...]"
        }
    }
}

/// A command line matched to its command.
struct ParsedCommand: Sendable {
    let command: String
    let arguments: [String]
    /// The flags given, such as `--hold`.
    let flags: Set<String>
    /// The options given with a value, by name (`--name`).
    let values: [String: String]

    func usageError(_ message: String) -> UsageError {
        UsageError(message, helpCommand: "\(ParlourctlCommandLine.program) \(command)")
    }
}
