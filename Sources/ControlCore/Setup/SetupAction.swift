// What `parlourctl setup` does next, as SetupFlow decides it: the terminal side
// only prints, reads a line, sends a request or runs the meter, and hands back
// what came of it. Keeping the actions this small is what keeps the steps, the
// checks and the words testable without a terminal.

/// One thing for the terminal side of setup to do.
public enum SetupAction: Sendable, Equatable {
    /// Print `text`, then `prompt` (no newline), and read one line; without echo when `secret`.
    /// Answer with `.line`, nil at the end of input (Ctrl-D).
    case ask(String, prompt: String, secret: Bool)
    /// Print `text`, send `request` (`cmd` and its arguments, without `v` and `id`), and answer
    /// with its `.result`.
    case send(String, request: JSONValue)
    /// Print `text`, send `meter` for `seconds`, draw each `level` event as it comes
    /// (`MeterText.bar`), and answer with its `.result`.
    case meter(String, seconds: Int)
    /// Print `text` and exit with `exitCode`.
    case finish(String, exitCode: Int32)
}
