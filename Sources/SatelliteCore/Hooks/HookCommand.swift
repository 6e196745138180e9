// The state hook's command: `hooks.onState` split into words (ShellWords) and its
// program found once, at start, so that a typo stops the daemon with the key
// named instead of failing quietly on every state change. The words are run
// with posix_spawn, never through a shell.
import Glibc

/// A program and its arguments, ready to run.
public struct HookCommand: Sendable, Equatable {
    /// The program as the config names it, then its arguments (argv).
    public var arguments: [String]
    /// The program's absolute path.
    public var executable: String

    public init(arguments: [String], executable: String) {
        self.arguments = arguments
        self.executable = executable
    }

    /// The PATH used when the daemon's environment has none.
    public static let defaultSearchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

    /// Checks a `hooks.onState` line without touching the disk: nil for no hook (`""`),
    /// else its words. The program must be an absolute path or a bare name to look up in PATH.
    public static func words(_ line: String) throws(ShellWords.Failure) -> [String]? {
        let words = try ShellWords.split(line)
        guard let program = words.first else { return nil }
        if program.isEmpty { throw ShellWords.Failure("the program name is empty") }
        if program.contains("/") && !program.hasPrefix("/") {
            throw ShellWords.Failure("the program \(program) is a relative path; name it by its absolute path,"
                + " or by a bare name to find in PATH")
        }
        return words
    }

    /// The hook of a checked `hooks.onState` line, with its program found; nil for none.
    /// `configFile` names the file in the error.
    public static func load(_ line: String, configFile: String, searchPath: String?) throws(ConfigError) -> HookCommand? {
        func refuse(_ why: ShellWords.Failure) -> ConfigError {
            ConfigError(file: configFile, keyPath: "hooks.onState",
                        message: "expected a command whose program exists and may be run, found \(Rejection.describe(.string(line))), in which \(why)")
        }
        let words: [String]?
        do {
            words = try HookCommand.words(line)
        } catch {
            throw refuse(error)
        }
        guard let words else { return nil }
        switch resolve(words, searchPath: searchPath) {
        case .success(let command): return command
        case .failure(let why): throw refuse(why)
        }
    }

    /// Finds the program of `words`: an absolute path as it is, a bare name in `searchPath`
    /// (colon-separated). The error says what was looked for and where.
    public static func resolve(_ words: [String], searchPath: String?) -> Result<HookCommand, ShellWords.Failure> {
        guard let program = words.first else { return .failure(ShellWords.Failure("there is no program")) }
        if program.hasPrefix("/") {
            guard FileSystem.isRunnable(program) else {
                let why = FileSystem.exists(program) ? "is not an executable file" : "does not exist"
                return .failure(ShellWords.Failure("the program \(program) \(why)"))
            }
            return .success(HookCommand(arguments: words, executable: program))
        }
        let search = searchPath.flatMap { $0.isEmpty ? nil : $0 } ?? defaultSearchPath
        for directory in search.split(separator: ":") where directory.hasPrefix("/") {
            let candidate = directory.hasSuffix("/") ? "\(directory)\(program)" : "\(directory)/\(program)"
            if FileSystem.isRunnable(candidate) { return .success(HookCommand(arguments: words, executable: candidate)) }
        }
        return .failure(ShellWords.Failure("no program \(program) was found in PATH (\(search))"))
    }
}
