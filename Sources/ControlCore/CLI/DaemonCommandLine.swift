// The daemon's command line: three paths and nothing else, because everything
// else belongs in satellite.json where it is validated and documented. The
// paths feed SatellitePaths.resolve, which adds the environment and defaults.

/// What `parlour-satellite` was asked to do.
public enum DaemonInvocation: Sendable, Equatable {
    /// Run, with the paths given on the command line under `config`, `state-dir` and `socket`
    /// (ready for `SatellitePaths.resolve(options:environment:)`).
    case run(options: [String: String])
    case help(String)
    case version(String)
}

/// Parses `parlour-satellite`'s arguments (without the program name).
public enum DaemonCommandLine {
    public static let program = "parlour-satellite"

    static let options = [
        OptionSpec("--config", value: "<path>", help: "Read the settings from this file."),
        OptionSpec("--state-dir", value: "<dir>", help: "Keep the token and the pinned server in this folder."),
        OptionSpec("--socket", value: "<path>", help: "Listen for parlourctl on this socket."),
    ]

    public static let versionText = "\(program) \(SatelliteVersion.satellite) (Parlour protocol \(SatelliteVersion.parlourProtocol))"

    public static func parse(_ arguments: [String]) -> Result<DaemonInvocation, UsageError> {
        var cursor = ArgumentCursor(arguments)
        var values: [String: String] = [:]
        var wantsHelp = false, wantsVersion = false
        var firstError: UsageError?
        func fail(_ message: String) { if firstError == nil { firstError = UsageError(message, helpCommand: program) } }

        while let token = cursor.next() {
            switch token {
            case .word(let word):
                fail("Unexpected argument '\(word)'.")
            case .option(let name, let inline) where name == "--help" || name == "-h":
                if inline != nil { fail("'\(name)' takes no value.") }
                wantsHelp = true
            case .option("--version", let inline):
                if inline != nil { fail("'--version' takes no value.") }
                wantsVersion = true
            case .option(let name, let inline):
                guard let option = options.first(where: { $0.name == name }) else {
                    fail("Unknown option '\(name)'." + Suggestion.didYouMean(name, among: options.map(\.name)))
                    continue
                }
                // The last one wins, as with most daemons, so a wrapper can override a unit's option.
                guard let value = cursor.value(inline: inline) else { fail("Missing value for '\(option.label)'."); continue }
                values[String(name.dropFirst(2))] = value
            }
        }
        if wantsHelp { return .success(.help(helpText)) }
        if let firstError { return .failure(firstError) }
        if wantsVersion { return .success(.version(versionText)) }
        return .success(.run(options: values))
    }

    public static var helpText: String {
        HelpText(
            overview: "Run the Parlour satellite in the foreground.",
            discussion: """
                systemd supervises it; it stops cleanly on SIGTERM or SIGINT. Without
                options it reads \(SatellitePaths.defaultConfig) (or
                $PARLOUR_SATELLITE_CONFIG), keeps its state in \(SatellitePaths.defaultStateDirectory)
                (or $STATE_DIRECTORY, else $PARLOUR_SATELLITE_STATE) and listens on
                \(SatellitePaths.defaultSocket) (or $PARLOUR_SATELLITE_SOCKET, else
                $RUNTIME_DIRECTORY/control.sock).
                """,
            usage: "\(program) " + options.map(\.usage).joined(separator: " "),
            options: options.map { ($0.label, $0.help) } + [StandardOptions.version, StandardOptions.help]
        ).text
    }
}
