// Splits a command line into options and words the same way for both programs:
// `--name value`, `--name=value`, `-h`, and `--` after which everything is a
// word (so `parlourctl ask -- -5 degrees?` works). Which options exist is the
// caller's business; this only tokenises.

/// Walks a command line one token at a time.
struct ArgumentCursor {
    enum Token: Equatable {
        /// `--name` or `-h`; `inline` is the part after `=` in `--name=value`.
        case option(name: String, inline: String?)
        case word(String)
    }

    private var remaining: ArraySlice<String>
    private var onlyWords = false

    init(_ arguments: [String]) { remaining = arguments[...] }

    mutating func next() -> Token? {
        while let argument = remaining.popFirst() {
            if onlyWords || argument == "-" || !argument.hasPrefix("-") { return .word(argument) }
            if argument == "--" { onlyWords = true; continue }
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                return .option(name: String(argument[..<equals]),
                               inline: String(argument[argument.index(after: equals)...]))
            }
            return .option(name: argument, inline: nil)
        }
        return nil
    }

    /// The value of an option just read: the inline part, else the next argument unless it is an
    /// option itself. Nil (or empty) means the value is missing.
    mutating func value(inline: String?) -> String? {
        if let inline { return inline.isEmpty ? nil : inline }
        guard let next = remaining.first, next == "-" || !next.hasPrefix("-") else { return nil }
        remaining.removeFirst()
        return next.isEmpty ? nil : next
    }
}
