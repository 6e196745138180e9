// Why satellite.json was refused. The daemon does not start on a bad config,
// so the message must be enough to fix the file: which file, which key, what
// was expected and what was there instead.

/// A config file the daemon will not start on.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file as the person named it (or the default path).
    public let file: String
    /// The dotted key path, such as `audio.silenceMs`; nil when the whole file is at fault.
    public let keyPath: String?
    /// What was expected and what was found, such as `expected a string, found 5`.
    public let message: String

    public init(file: String, keyPath: String?, message: String) {
        self.file = file
        self.keyPath = keyPath
        self.message = message
    }

    /// `<file>: <keyPath>: <message>`, or `<file>: <message>` for the whole file.
    public var description: String {
        if let keyPath { return "\(file): \(keyPath): \(message)" }
        return "\(file): \(message)"
    }
}
