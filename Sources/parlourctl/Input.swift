// What parlourctl reads from the person rather than the command line: a secret
// on standard input (a pairing link, a token), and a yes or no on the terminal.
// Easy to get wrong: the question must go to the terminal itself (/dev/tty),
// because standard input may be the link, and with no terminal nobody can say
// yes, so the answer is "no one asked" rather than a silent no.
import Foundation

enum Input {
    /// Standard input to its end, trimmed.
    static func readAll() -> String {
        let data = FileHandle.standardInput.readDataToEndOfFile()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// What the house loses while a model server is stopped, for the question before stopping it.
    static func stopping(_ service: String) -> String {
        switch service {
        case "llm": "The house answers through the cloud model, or not at all, until it is started again."
        case "whisper": "The house cannot make out what is said until it is started again."
        default: "It stays stopped until it is started again."
        }
    }

    /// Asks `question` on the terminal: true for y or yes, false for anything else, nil when
    /// there is no terminal to ask on.
    static func confirm(_ question: String) -> Bool? {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        let terminal = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        terminal.write(Data(question.utf8))
        var answer: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1, byte != UInt8(ascii: "\n") { answer.append(byte) }
        let word = String(decoding: answer, as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased()
        return word == "y" || word == "yes"
    }
}
