// A settings.json that cannot be used. Muting is a promise about privacy, so a
// broken file is read as muted, never as a microphone left open; the message
// says so and names the way out.

/// A settings.json that cannot be read: which file, what is wrong, and the way out.
public struct SettingsFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public let file: String
    /// What is wrong, such as `"muted" should be true or false, not a string`.
    public let problem: String

    public init(file: String, problem: String) {
        self.file = file
        self.problem = problem
    }

    public var description: String {
        "The satellite's settings in \(file) cannot be read: \(problem). Until they are replaced the microphone stays "
            + "muted and the config's room is used; parlourctl unmute (or parlourctl room NAME) writes the file afresh."
    }
}
