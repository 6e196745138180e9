// The /listen messages as the server sends them (parlour-protocol.md, section 2),
// and the garbage a broken or hostile peer might send instead: every line of
// the table is a message, and what the satellite must make of it.
import SatelliteCore
import Testing

@Suite("the /listen message codec")
struct ListenMessageTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let text: String
        let expected: ListenMessage
        var testDescription: String { text }
    }

    static let good: [Case] = [
        Case(text: #"{"type":"ready","sampleRate":16000,"frameSamples":1280,"mode":"wake"}"#,
             expected: .ready(sampleRate: 16000, frameSamples: 1280, mode: .wake)),
        Case(text: #"{"type":"ready","sampleRate":16000,"frameSamples":1280,"mode":"push"}"#,
             expected: .ready(sampleRate: 16000, frameSamples: 1280, mode: .push)),
        Case(text: #"{"type":"state","value":"idle"}"#, expected: .state(.idle, text: nil)),
        Case(text: #"{"type":"state","value":"listening"}"#, expected: .state(.listening, text: nil)),
        Case(text: #"{"type":"state","value":"thinking"}"#, expected: .state(.thinking, text: nil)),
        Case(text: #"{"type":"state","value":"thinking","text":"turn off the kitchen lights"}"#,
             expected: .state(.thinking, text: "turn off the kitchen lights")),
        Case(text: #"{"type":"state","value":"thinking","text":null}"#, expected: .state(.thinking, text: nil)),
        Case(text: #"{"type":"state","value":"speaking"}"#, expected: .state(.speaking, text: nil)),
        Case(text: #"{"type":"reply","text":"The lights are off.","via":"local"}"#,
             expected: .reply(text: "The lights are off.", via: "local")),
        Case(text: #"{"type":"reply","text":"","via":"cloud"}"#, expected: .reply(text: "", via: "cloud")),
        Case(text: #"{"type":"stop"}"#, expected: .stop),
        Case(text: #"{"type":"weird"}"#, expected: .unknown(type: "weird")),
        Case(text: #"{"type":"padding","text":"xxx"}"#, expected: .unknown(type: "padding")),
        Case(text: #"{"type":"STOP"}"#, expected: .unknown(type: "STOP")),
        Case(text: #"{"via":"local","type":"reply","text":"é ✓","extra":[1,2]}"#,
             expected: .reply(text: "é ✓", via: "local")),
        Case(text: "  {\"type\":\"stop\"}\n", expected: .stop),
    ]

    @Test("a message the server sends is read as what it means", arguments: good)
    func decodes(_ item: Case) throws {
        #expect(try ListenMessage.decode(item.text) == item.expected)
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        let text: String
        let error: String
        var testDescription: String { text.count > 60 ? String(text.prefix(60)) + "…" : text }
    }

    static let bad: [Bad] = [
        Bad(text: "", error: "the message is not JSON"),
        Bad(text: "hello", error: "the message is not JSON"),
        Bad(text: #"{"type":"reply","text":"unterminated"#, error: "the message is not JSON"),
        Bad(text: "\u{0}\u{1}\u{2}", error: "the message is not JSON"),
        Bad(text: "[]", error: "the message is an array, not a JSON object"),
        Bad(text: #""stop""#, error: "the message is a string, not a JSON object"),
        Bad(text: "42", error: "the message is a number, not a JSON object"),
        Bad(text: "null", error: "the message is null, not a JSON object"),
        Bad(text: "{}", error: "the message has no \"type\""),
        Bad(text: #"{"value":"idle"}"#, error: "the message has no \"type\""),
        Bad(text: #"{"type":7}"#, error: "\"type\" is a number, not a string"),
        Bad(text: #"{"type":null}"#, error: "\"type\" is null, not a string"),
        Bad(text: #"{"type":"ready","frameSamples":1280,"mode":"wake"}"#, error: "ready: \"sampleRate\" is missing"),
        Bad(text: #"{"type":"ready","sampleRate":"16000","frameSamples":1280,"mode":"wake"}"#,
            error: "ready: \"sampleRate\" is a string, not a whole number"),
        Bad(text: #"{"type":"ready","sampleRate":16000.5,"frameSamples":1280,"mode":"wake"}"#,
            error: "ready: \"sampleRate\" is 16000.5, not a whole number"),
        Bad(text: #"{"type":"ready","sampleRate":16000,"frameSamples":1280}"#, error: "ready: \"mode\" is missing"),
        Bad(text: #"{"type":"ready","sampleRate":16000,"frameSamples":1280,"mode":"shout"}"#,
            error: "ready: \"mode\" is \"shout\", not wake or push"),
        Bad(text: #"{"type":"state"}"#, error: "state: \"value\" is missing"),
        Bad(text: #"{"type":"state","value":"dancing"}"#,
            error: "state: \"value\" is \"dancing\", not idle, listening, thinking or speaking"),
        Bad(text: #"{"type":"state","value":"thinking","text":3}"#, error: "state: \"text\" is a number, not a string"),
        Bad(text: #"{"type":"reply","via":"local"}"#, error: "reply: \"text\" is missing"),
        Bad(text: #"{"type":"reply","text":"hi"}"#, error: "reply: \"via\" is missing"),
        Bad(text: #"{"type":"reply","text":["hi"],"via":"local"}"#, error: "reply: \"text\" is an array, not a string"),
    ]

    @Test("garbage is an error that says what is wrong with it", arguments: bad)
    func refuses(_ item: Bad) {
        #expect {
            try ListenMessage.decode(item.text)
        } throws: { error in
            (error as? ListenMessageError)?.description.hasPrefix(item.error) == true
        }
    }

    @Test("the 4 KiB bound counts UTF-8 bytes and allows exactly 4096")
    func bound() throws {
        let frame = #"{"type":"reply","via":"local","text":""}"#
        let fill = ListenMessage.maxTextBytes - frame.utf8.count
        let exact = #"{"type":"reply","via":"local","text":""# + String(repeating: "x", count: fill) + #""}"#
        #expect(exact.utf8.count == 4096)
        #expect(try ListenMessage.decode(exact) == .reply(text: String(repeating: "x", count: fill), via: "local"))

        let over = #"{"type":"reply","via":"local","text":""# + String(repeating: "x", count: fill + 1) + #""}"#
        #expect(throws: ListenMessageError("the message is 4097 bytes, over 4 KiB")) { try ListenMessage.decode(over) }

        // 2000 characters of two bytes each: under 4096 characters, over 4096 bytes.
        let wide = #"{"type":"reply","via":"local","text":""# + String(repeating: "é", count: 2040) + #""}"#
        #expect(wide.count < 4096)
        #expect(throws: ListenMessageError.self) { try ListenMessage.decode(wide) }
    }

    @Test("the huge text the test server sends is refused before it is parsed")
    func hugePadding() {
        let huge = #"{"type":"padding","text":""# + String(repeating: "x", count: 5120 - 28) + #""}"#
        #expect(throws: ListenMessageError.self) { try ListenMessage.decode(huge) }
    }

    @Test("each command is the one-key object the server matches", arguments: [
        (ListenCommand.start, #"{"type":"start"}"#),
        (ListenCommand.end, #"{"type":"end"}"#),
        (ListenCommand.cancel, #"{"type":"cancel"}"#),
        (ListenCommand.spoke, #"{"type":"spoke"}"#),
    ])
    func encodes(_ command: ListenCommand, _ text: String) throws {
        #expect(command.text == text)
        #expect(try JSONValue.parse(command.text) == ["type": .string(command.rawValue)])
    }
}
