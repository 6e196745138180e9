// Trimming without Foundation's CharacterSet (StringProtocol+Trimming): the same
// answers CharacterSet.whitespacesAndNewlines and .whitespaces gave, since config
// values, tokens and pairing links are trimmed with them.
import Testing
import SatelliteCore

@Suite("trimming text")
struct TrimmingTests {
    @Test("whitespace and line breaks go from both ends, never from the middle", arguments: [
        ("  token\n", "token"), ("\t\r\nparlour://pair?x=1 \u{00A0}", "parlour://pair?x=1"), ("a b", "a b"),
        (" \n\t ", ""), ("", ""), ("\u{3000}kitchen\u{2029}", "kitchen"),
    ])
    func trimmed(text: String, expected: String) {
        #expect(text.trimmed() == expected)
    }

    @Test("trimming spaces keeps line breaks", arguments: [
        ("  800 ", "800"), ("\t42\t", "42"), ("x\n", "x\n"), ("\u{00A0}y", "y"),
    ])
    func spaces(text: String, expected: String) {
        #expect(text.trimmingSpaces() == expected)
    }

    @Test("any scalar can be trimmed, and a substring trims like a string")
    func custom() {
        #expect("..den.local..".trimming { $0 == "." } == "den.local")
        #expect("[ x ]".dropFirst().dropLast().trimmed() == "x")
    }

    @Test("control and format characters are told apart from text", arguments: [
        ("\u{7}", true), ("\u{200B}", true), ("\n", true), ("a", false), (" ", false), ("é", false),
    ])
    func control(text: String, expected: Bool) {
        #expect(text.unicodeScalars.first!.isControlCharacter == expected)
    }
}
