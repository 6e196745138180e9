// What parlourctl reads from the person rather than the command line: a secret
// on standard input (a pairing link, a token), a yes or no on the terminal, and
// setup's answers (a token typed there without echo).
// Easy to get wrong: the question must go to the terminal itself (/dev/tty),
// because standard input may be the link, and with no terminal nobody can say
// yes, so the answer is "no one asked" rather than a silent no.
import Glibc
import ControlCore

/// The terminal's settings while echo is off, so that Ctrl-C can put echo back.
nonisolated(unsafe) private var echoing: termios?

enum Input {
    /// Shows `prompt`, then reads one line of standard input without its newline, nil at its end;
    /// with `secret`, what is typed is not shown: echo goes off before the prompt appears (so
    /// nothing typed ahead of it is echoed either) until the line ends, and comes back on Ctrl-C.
    static func line(prompt: String, secret: Bool = false) -> String? {
        var saved = termios()
        guard secret, tcgetattr(0, &saved) == 0 else {
            Output.out(prompt)
            return readLine(strippingNewline: true)
        }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        echoing = saved
        signal(SIGINT) { _ in
            if var saved = echoing { tcsetattr(0, TCSANOW, &saved) }
            _exit(130)
        }
        // TCSANOW, not TCSAFLUSH: what was typed ahead stays.
        tcsetattr(0, TCSANOW, &quiet)
        Output.out(prompt)
        defer {
            tcsetattr(0, TCSANOW, &saved)
            signal(SIGINT, SIG_DFL)
            echoing = nil
        }
        return readLine(strippingNewline: true)
    }

    /// Standard input to its end, trimmed.
    static func readAll() -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes.append(contentsOf: chunk[..<n])
        }
        return String(decoding: bytes, as: UTF8.self).trimmed()
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
        defer { close(fd) }
        Output.write(question, to: fd)
        var answer: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1, byte != UInt8(ascii: "\n") { answer.append(byte) }
        let word = String(decoding: answer, as: UTF8.self).trimmingSpaces().lowercased()
        return word == "y" || word == "yes"
    }
}
