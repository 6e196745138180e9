// A command line that could not be understood. Both programs print it and exit
// 2 without doing anything, so it must name the offending word exactly as typed
// and point at the help that shows the right way.

/// A command line that was not understood: print `description` on stderr and exit with `exitCode`.
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// One sentence quoting the offending word, such as `Unknown option '--jsno'.`
    public let message: String
    /// The command whose help explains the right way, such as `parlourctl listen`.
    public let helpCommand: String

    public init(_ message: String, helpCommand: String) {
        self.message = message
        self.helpCommand = helpCommand
    }

    public static let exitCode: Int32 = 2

    public var description: String { "Error: \(message)\nSee '\(helpCommand) --help'." }
}
