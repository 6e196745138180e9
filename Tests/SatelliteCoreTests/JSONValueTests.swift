import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore
import TestSupport

@Suite("JSON values")
struct JSONValueTests {
    @Test("whole numbers print without a fraction and keys are sorted")
    func compactText() throws {
        let value: JSONValue = ["b": 2, "a": [true, nil, 1.5, "x\"y\n"]]
        #expect(value.text == #"{"a":[true,null,1.5,"x\"y\n"],"b":2}"#)
    }

    @Test("true stays a boolean and 1 stays a number")
    func booleansAreNotNumbers() throws {
        let value = try JSONValue.parse(#"{"t": true, "one": 1, "zero": 0, "f": false}"#)
        #expect(value["t"] == .bool(true))
        #expect(value["one"] == .number(1))
        #expect(value["zero"] == .number(0))
        #expect(value["f"] == .bool(false))
    }

    @Test("text parses back to the same value", arguments: [
        #"{"a":[1,2,{"b":null}],"c":"ü\u0001"}"#, "[]", "{}", "\"s\"", "-2.5",
    ])
    func roundTrip(text: String) throws {
        let value = try JSONValue.parse(text)
        #expect(try JSONValue.parse(value.text) == value)
    }

    /// Documents RFC 8259 allows, and documents it does not (each a habit of lenient parsers).
    static let strictlyValid = [
        "0", "-0", "0.000e-999", "1e3", "1E+3", "2.5e-3", "-12.75", "123456789012345678", #""\u00e9\ud83c\udf70\/\b\f\n\r\t""#,
        " \t\r\n[ 1 , {\"a\" : [ ] } ]\n", "true", "null", #"{"a":1,"a":2}"#, "\"é🍰\"",
    ]
    static let strictlyInvalid = [
        "01", "1.", ".5", "+1", "1e", "-", "0x10", "NaN", "Infinity", "1e400", "5e-380", "-1e-400", "[1,]", "{\"a\":1,}", "[1 2]",
        "{'a':1}", "{a:1}", "// c\n1", "tru", "nulls", "[\"a\"\"b\"]", "\"\t\"", #""\x41""#, #""\ud800""#,
        #""\udc00x""#, #""\ud800\u0041""#, "\"abc", "[", "1 2", "\u{FEFF}1",
    ]

    @Test("what RFC 8259 allows is read as JSONDecoder reads it", arguments: strictlyValid)
    func matchesFoundation(text: String) throws {
        let ours = try JSONValue.parse(text)
        let theirs = try JSONDecoder().decode(FoundationJSON.self, from: Data(text.utf8)).value
        #expect(ours == theirs)
    }

    @Test("what RFC 8259 does not allow is refused, saying where", arguments: strictlyInvalid)
    func strict(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
        do {
            _ = try JSONValue.parse(text)
        } catch {
            #expect(error.description.hasPrefix("it is not valid JSON ("), "\(error.description)")
        }
    }

    @Test("bytes that are not UTF-8 are refused inside a string")
    func notUTF8() throws {
        #expect(throws: JSONParseError.self) { try JSONValue.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: JSONParseError.self) { try JSONValue.parse([0x22, 0xED, 0xA0, 0x80, 0x22]) }
        #expect(try JSONValue.parse([0x22, 0xC3, 0xA9, 0x22]) == "é")
    }

    @Test("0 with an exponent is a number, as RFC 8259's grammar has it (JSONDecoder, which the daemon used before, refused it)")
    func zeroWithExponent() throws {
        #expect(try JSONValue.parse("0e2") == 0)
        #expect(try JSONValue.parse("[-0E+1]") == [0])
    }

    @Test("a refusal says what is wrong and at which byte")
    func whereItWentWrong() {
        #expect(throws: JSONParseError(description: "it is not valid JSON ('}' at byte 6 where a value should be)")) {
            try JSONValue.parse(#"{"a":}"#)
        }
        #expect(throws: JSONParseError(description: "it is not valid JSON (it is empty)")) { try JSONValue.parse("") }
        #expect(throws: JSONParseError(description: "it is not valid JSON (more follows the value at byte 3)")) {
            try JSONValue.parse("1 2")
        }
    }

    @Test("garbage is an error, not a crash", arguments: ["", "{", "nope", "{\"a\":}", "\u{0}"])
    func garbage(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    static func nested(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    @Test("arrays and objects nested 32 deep are read, 33 deep are refused")
    func depthLimit() throws {
        #expect(try JSONValue.parse(Self.nested(32)) != .null)
        #expect(try JSONValue.parse(String(repeating: #"{"a":"#, count: 32) + "1" + String(repeating: "}", count: 32)) != .null)
        for text in [Self.nested(33), String(repeating: #"{"a":["#, count: 17) + String(repeating: "]}", count: 17)] {
            #expect(throws: JSONParseError(description: "it nests arrays and objects more than 32 deep")) {
                try JSONValue.parse(text)
            }
        }
    }

    @Test("brackets inside strings, escaped quotes among them, do not count as nesting")
    func bracketsInStrings() throws {
        let text = #"["\"[[[["# + String(repeating: "[{", count: 100) + #"\\", "]"]"#
        #expect(try JSONValue.parse(text).arrayValue?.count == 2)
    }

    /// A control request whose id nests 150 arrays overflowed the 256 KiB stack of a control
    /// connection's reader thread (ControlServer) while decoding, and took the daemon down.
    @Test("a deeply nested request is refused on a control reader's stack, not a crash", .timeLimit(.minutes(1)))
    func deepRequestOnSmallStack() async throws {
        let line = Array((#"{"v":1,"cmd":"status","id":"# + Self.nested(150) + "}").utf8)
        let message = await withCheckedContinuation { (done: CheckedContinuation<String?, Never>) in
            let reader = Thread {
                if case .failure(let rejection) = ControlProtocol.decode(line) {
                    done.resume(returning: rejection.error.message)
                } else {
                    done.resume(returning: nil)
                }
            }
            reader.stackSize = 256 * 1024
            reader.start()
        }
        #expect(message == "The request is not JSON: it nests arrays and objects more than 32 deep. Send one JSON object a line.")
    }
}
