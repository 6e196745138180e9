import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("a hook's command line is split like a shell would, and run without one")
struct ShellWordsTests {
    @Test("words, quotes and backslashes", arguments: [
        ("", []),
        ("   \t ", []),
        ("led.sh", ["led.sh"]),
        ("/usr/local/bin/led.sh  led0 \t fast", ["/usr/local/bin/led.sh", "led0", "fast"]),
        (#"say 'hello world'"#, ["say", "hello world"]),
        (#"say "hello world""#, ["say", "hello world"]),
        (#"a'b'"c"d"#, ["abcd"]),
        (#"empty '' "" end"#, ["empty", "", "", "end"]),
        (#"one\ word"#, ["one word"]),
        (#"back\\slash"#, [#"back\slash"#]),
        (#"'it''s'"#, ["its"]),
        (#""it's""#, ["it's"]),
        (#"'single keeps \ and " and $HOME'"#, [#"single keeps \ and " and $HOME"#]),
        (#""double: \" \\ \n""#, [#"double: " \ \n"#]),
        (#"quoted '|' "&" '>' '$x' '*'"#, ["quoted", "|", "&", ">", "$x", "*"]),
        (#"\| \> \$x \*"#, ["|", ">", "$x", "*"]),
        ("line\\\ncontinued", ["linecontinued"]),
        ("a\nb", ["a", "b"]),
        ("mid#hash tilde~", ["mid#hash", "tilde~"]),
        ("name=value prog", ["name=value", "prog"]),
    ])
    func split(line: String, words: [String]) throws {
        #expect(try ShellWords.split(line) == words)
    }

    @Test("what a shell would treat specially is refused, with the reason", arguments: [
        ("led.sh > /tmp/log", "> outside quotes"),
        ("led.sh | logger", "| outside quotes"),
        ("led.sh; reboot", "; outside quotes"),
        ("led.sh &", "& outside quotes"),
        ("$HOME/led.sh", "$ outside quotes"),
        ("led.sh `date`", "` outside quotes"),
        ("led.sh $(date)", "$ outside quotes"),
        ("led.sh *.conf", "* outside quotes"),
        ("led.sh led?", "? outside quotes"),
        ("led.sh [ab]", "[ outside quotes"),
        ("led.sh (x)", "( outside quotes"),
        ("led.sh < in", "< outside quotes"),
        ("~/led.sh", "~ at the start of a word"),
        ("led.sh # comment", "# at the start of a word"),
        (#"led.sh "$HOME""#, "$ inside double quotes"),
        (#"led.sh "`date`""#, "` inside double quotes"),
        ("led.sh 'open", "a ' quote is not closed"),
        (#"led.sh "open"#, #"a " quote is not closed"#),
        (#"led.sh "open\"#, #"a " quote is not closed"#),
        (#"led.sh \"#, #"lone \"#),
    ])
    func refused(line: String, reason: String) {
        #expect(throws: ShellWords.Failure.self) { try ShellWords.split(line) }
        do {
            _ = try ShellWords.split(line)
        } catch {
            #expect(error.description.contains(reason), "\(error.description)")
        }
    }

    @Test("the program must be an absolute path or a bare name", arguments: [
        ("led.sh", true), ("/usr/bin/env led", true), ("./led.sh", false), ("hooks/led.sh", false), ("'' x", false),
    ])
    func program(line: String, accepted: Bool) {
        let words = try? HookCommand.words(line)
        #expect((words != nil) == accepted)
    }

    @Test("a bare name is found in PATH; an absolute path must be an executable file")
    func resolve() throws {
        let found = try HookCommand.resolve(["sh", "-c", "true"], searchPath: "/nonexistent:/bin:/usr/bin").get()
        #expect(found.executable.hasSuffix("/sh"))
        #expect(found.arguments == ["sh", "-c", "true"])
        #expect(try HookCommand.resolve(["/bin/sh"], searchPath: nil).get().executable == "/bin/sh")

        let missing = HookCommand.resolve(["no-such-hook-program"], searchPath: "/bin")
        #expect(throws: ShellWords.Failure.self) { try missing.get() }
        let plain = FileManager.default.temporaryDirectory.appendingPathComponent("hook-\(UUID().uuidString).txt").path
        _ = FileManager.default.createFile(atPath: plain, contents: Data("x".utf8), attributes: [.posixPermissions: 0o644])
        defer { unlink(plain) }
        let notRunnable = HookCommand.resolve([plain], searchPath: nil)
        #expect(throws: ShellWords.Failure.self) { try notRunnable.get() }
        let folder = HookCommand.resolve(["/tmp"], searchPath: nil)
        #expect(throws: ShellWords.Failure.self) { try folder.get() }
    }

    @Test("loading names the file and hooks.onState; an empty line is no hook")
    func load() throws {
        #expect(try HookCommand.load("", configFile: "satellite.json", searchPath: nil) == nil)
        #expect(try HookCommand.load("sh -c 'exit 0'", configFile: "satellite.json", searchPath: "/bin")?.arguments == ["sh", "-c", "exit 0"])
        do {
            _ = try HookCommand.load("no-such-hook-program led0", configFile: "/etc/x.json", searchPath: "/bin:/usr/bin")
            Issue.record("a missing program was accepted")
        } catch {
            #expect(error.description == #"/etc/x.json: hooks.onState: expected a command whose program exists and may be run, "#
                + #"found "no-such-hook-program led0", in which no program no-such-hook-program was found in PATH (/bin:/usr/bin)"#)
        }
    }
}
