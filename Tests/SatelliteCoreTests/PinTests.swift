import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("pin.json")
struct PinTests {
    private static let may1 = WallTime(seconds: 1_714_564_800)  // 2024-05-01T12:00:00Z

    private func decode(_ text: String) throws(PinFileError) -> Pin {
        try Pin.decode(Array(text.utf8), file: "/var/lib/parlour-satellite/pin.json")
    }

    @Test("a pin is written as INTERFACE.md says, one line with a newline")
    func written() {
        let pin = Pin(url: "http://den.local:8765", name: "Parlour on den", how: .paired, pinnedAt: Self.may1)
        #expect(String(decoding: pin.fileData, as: UTF8.self)
            == #"{"how":"paired","name":"Parlour on den","pinnedAt":"2024-05-01T12:00:00Z","tokenSource":"state","url":"http://den.local:8765"}"# + "\n")
    }

    @Test("every kind of stored pin reads back as it was written", arguments: [PinHow.paired, .manual, .discovered])
    func roundTrip(how: PinHow) throws {
        let pin = Pin(url: "https://[fe80::1]:8443", name: "Café \"den\"", how: how, pinnedAt: Self.may1)
        #expect(try Pin.decode(pin.fileData, file: "pin.json") == pin)
    }

    @Test("dates with an offset or fractions of a second are read, and unknown keys ignored")
    func lenientRead() throws {
        let pin = try decode(#"{"url":"http://den.local:8765","name":"Den","how":"manual","pinnedAt":"2024-05-01T14:00:00+02:00","by":"x"}"#)
        #expect(pin == Pin(url: "http://den.local:8765", name: "Den", how: .manual, pinnedAt: Self.may1))
        let fractional = try decode(#"{"url":"http://den.local","name":"Den","how":"manual","pinnedAt":"2024-05-01T12:00:00.250Z"}"#)
        #expect(fractional.pinnedAt == Self.may1)
    }

    @Test("a broken pin.json names the file, what is wrong and the way out", arguments: [
        ("", "not valid JSON"),
        ("{\"url\":", "not valid JSON"),
        ("[]", "an array, not an object"),
        (#"{"name":"Den","how":"paired","pinnedAt":"2024-05-01T12:00:00Z"}"#, "\"url\" is missing"),
        (#"{"url":5,"name":"Den","how":"paired","pinnedAt":"2024-05-01T12:00:00Z"}"#, "\"url\" should be a string, not a number"),
        (#"{"url":"tel:123","name":"Den","how":"paired","pinnedAt":"2024-05-01T12:00:00Z"}"#, "\"url\" is not an http or https"),
        (#"{"url":"http://den","how":"paired","pinnedAt":"2024-05-01T12:00:00Z"}"#, "\"name\" is missing"),
        (#"{"url":"http://den","name":"Den","how":"found","pinnedAt":"2024-05-01T12:00:00Z"}"#, "\"how\" should be"),
        (#"{"url":"http://den","name":"Den","how":"configured","pinnedAt":"2024-05-01T12:00:00Z"}"#, "\"how\" should be"),
        (#"{"url":"http://den","name":"Den","how":"paired"}"#, "\"pinnedAt\" is missing"),
        (#"{"url":"http://den","name":"Den","how":"paired","pinnedAt":"yesterday"}"#, "\"pinnedAt\" is not an ISO 8601"),
        (#"{"url":"http://den","name":"Den","how":"paired","pinnedAt":"2024-05-01T12:00:00Z","tokenSource":"file"}"#, "\"tokenSource\" should be"),
        (#"{"url":"http://me:pw@den","name":"Den","how":"manual","pinnedAt":"2024-05-01T12:00:00Z"}"#, "\"url\" is not an http or https"),
    ])
    func broken(text: String, problem: String) {
        do {
            let pin = try decode(text)
            Issue.record("read \(pin)")
        } catch {
            #expect(error.file == "/var/lib/parlour-satellite/pin.json")
            #expect(error.problem.contains(problem))
            #expect(error.description.hasPrefix("The pinned server in /var/lib/parlour-satellite/pin.json cannot be read: "))
            #expect(error.description.contains("parlourctl unpin"))
        }
    }

    @Test("tokenSource names the token's place or none; a pin.json from before it has the state folder's", arguments: [
        (#","tokenSource":"credential""#, TokenKind?.some(.credential)), (#","tokenSource":"environment""#, .environment),
        (#","tokenSource":"state""#, .state), (#","tokenSource":null"#, nil), ("", .state),
    ])
    func tokenSource(field: String, kind: TokenKind?) throws {
        let pin = try decode(#"{"url":"http://den.local","name":"Den","how":"manual","pinnedAt":"2024-05-01T12:00:00Z""# + field + "}")
        #expect(pin.tokenSource == kind)
        #expect(try Pin.decode(pin.fileData, file: "pin.json") == pin)
        #expect(!String(decoding: pin.fileData, as: UTF8.self).contains("token\":"), "the place, never a token")
    }
}
