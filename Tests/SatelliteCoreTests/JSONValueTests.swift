import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

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
