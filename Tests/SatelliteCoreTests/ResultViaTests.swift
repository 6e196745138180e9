import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("an error result can say the satellite spoke")
struct ResultViaTests {
    @Test("via rides on an error result, and parlourctl reads it back")
    func roundTrip() throws {
        let said = ControlResult.error(SatelliteError(.serverUnreachable, "The server cannot be reached. The satellite said so itself.", via: "satellite"))
        #expect(said.json["via"] == "satellite")
        #expect(said.json["error"] == "server_unreachable")
        let line = said.line(id: "7")
        let read = try #require(ControlResult(json: try JSONValue.parse(Data(line.utf8))))
        #expect(read == said)
        #expect(read.exitCode == 1)
    }

    @Test("an error the satellite did not speak has no via at all")
    func without() {
        let plain = ControlResult.failure(.serverUnreachable, "The server cannot be reached.")
        #expect(plain.json["via"] == nil)
        #expect(ControlResult(json: plain.json) == plain)
    }

    @Test("watch sees it in the finished event")
    func event() {
        let said = ControlResult.error(SatelliteError(.serverUnreachable, "x", via: "satellite"))
        #expect(SatelliteEvent.finished(command: "listen", result: said).json["result"]?["via"] == "satellite")
    }
}
