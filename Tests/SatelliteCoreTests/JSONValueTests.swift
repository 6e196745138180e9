import Testing
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
}
