// Splits a command line into words the way a POSIX shell would (quotes and
// backslashes), so `hooks.onState` reads as people write it, while the
// satellite runs the words itself with posix_spawn and no shell. Easy to get
// wrong: a line written for a shell (`led.sh > /tmp/log`, `$HOME/led.sh`)
// would silently mean something else without one, so everything a shell
// would expand or interpret outside quotes is refused rather than passed on.

/// POSIX shell word splitting, without expansion.
///
/// - Blanks (space, tab, newline) separate words; `''` and `""` make an empty word.
/// - `'…'` keeps everything inside as it is.
/// - `"…"` keeps everything inside except `\"`, `\\` and `\` + newline, as in a shell;
///   `$` and `` ` `` inside are refused (a shell would expand them).
/// - `\` outside quotes keeps the next character as it is; `\` + newline joins lines.
/// - Refused outside quotes: `| & ; < > ( ) $ `` ` `` * ? [`, and `#` or `~` at the start
///   of a word: a shell would treat them specially, and there is no shell here.
public enum ShellWords {
    /// Why a line cannot be split; `description` says what to change.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String

        init(_ description: String) { self.description = description }
    }

    static let operators: Set<Character> = ["|", "&", ";", "<", ">", "(", ")", "$", "`", "*", "?", "["]
    static let blanks: Set<Character> = [" ", "\t", "\n"]

    /// The words of `line`; `[]` when it holds none.
    public static func split(_ line: String) throws(Failure) -> [String] {
        var words: [String] = []
        var word = ""
        // Whether a word has begun: `''` is a word even though it is empty.
        var inWord = false
        var characters = Array(line)[...]

        while let c = characters.popFirst() {
            switch c {
            case _ where blanks.contains(c):
                if inWord { words.append(word) }
                word = ""
                inWord = false
            case "\\":
                guard let next = characters.popFirst() else {
                    throw Failure("the line ends with a lone \\; write \\\\ for a backslash")
                }
                if next != "\n" {
                    word.append(next)
                    inWord = true
                }
            case "'":
                guard let end = characters.firstIndex(of: "'") else {
                    throw Failure("a ' quote is not closed")
                }
                word += String(characters[..<end])
                characters = characters[(end + 1)...]
                inWord = true
            case "\"":
                try doubleQuoted(&characters, into: &word)
                inWord = true
            case "#" where !inWord, "~" where !inWord:
                throw refusal(c, "at the start of a word")
            case _ where operators.contains(c):
                throw refusal(c, "outside quotes")
            default:
                word.append(c)
                inWord = true
            }
        }
        if inWord { words.append(word) }
        return words
    }

    /// Reads up to the closing `"`, which it consumes.
    private static func doubleQuoted(_ characters: inout ArraySlice<Character>, into word: inout String) throws(Failure) {
        while let c = characters.popFirst() {
            switch c {
            case "\"":
                return
            case "\\":
                guard let next = characters.popFirst() else { break }
                switch next {
                case "\"", "\\", "$", "`": word.append(next)
                case "\n": break
                default: word += "\\\(next)"
                }
            case "$", "`":
                throw Failure("\(c) inside double quotes would be expanded by a shell, and this command is not run by one;"
                    + " put it in single quotes to pass it on as it is")
            default:
                word.append(c)
            }
        }
        throw Failure("a \" quote is not closed")
    }

    private static func refusal(_ c: Character, _ place: String) -> Failure {
        Failure("\(c) \(place) means something to a shell, and this command is not run by one (no pipes, redirections,"
            + " variables or wildcards); quote it to pass it on as it is, or put the shell code in a script")
    }
}
