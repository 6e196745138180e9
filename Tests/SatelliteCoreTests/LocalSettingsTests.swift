// settings.json (the room set with parlourctl, and muting) and the control
// requests that change it: what is written, what is read back, which room wins
// over the config's, and what a broken file or a bad request is told.
import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("settings.json and the room, mute and volume requests")
struct LocalSettingsTests {
    @Test("settings are written as one line and read back as they were", arguments: [
        LocalSettings(), LocalSettings(muted: true), LocalSettings(muted: false, room: .init(name: "study", configRoom: "hall")),
        LocalSettings(muted: true, room: .init(name: "", configRoom: "hall")),
    ])
    func roundTrip(settings: LocalSettings) throws {
        let text = String(decoding: settings.fileData, as: UTF8.self)
        #expect(text.hasSuffix("}\n") && text.filter { $0 == "\n" }.count == 1)
        #expect(try LocalSettings.decode(settings.fileData, file: "/s.json") == settings)
    }

    @Test("a room set with parlourctl wins until the config's room is edited")
    func precedence() {
        let set = LocalSettings(room: .init(name: "study", configRoom: "hall"))
        #expect(set.room(config: "hall") == "study")
        #expect(!set.roomIsStale(config: "hall"))
        #expect(set.room(config: "den") == "den")
        #expect(set.roomIsStale(config: "den"))
        #expect(LocalSettings().room(config: "hall") == "hall")
        #expect(LocalSettings(room: .init(name: "", configRoom: "hall")).room(config: "hall") == "")
    }

    @Test("a broken settings.json names the file and what is wrong, and says the microphone stays muted", arguments: [
        ("{not json", "The satellite's settings in /s.json cannot be read:"),
        ("[]", "it holds an array, not an object"),
        (#"{"muted": "yes"}"#, #""muted" should be true or false, not a string"#),
        (#"{"room": "study"}"#, #""room" and "configRoom" should both be strings"#),
        (#"{"room": "\#(String(repeating: "r", count: 41))", "configRoom": ""}"#, #""room" is not a room name of at most 40 characters"#),
    ])
    func broken(text: String, problem: String) {
        #expect(throws: SettingsFileError.self) { try LocalSettings.decode(Array(text.utf8), file: "/s.json") }
        do {
            _ = try LocalSettings.decode(Array(text.utf8), file: "/s.json")
        } catch {
            #expect(error.description.contains(problem))
            #expect(error.description.contains("the microphone stays muted"))
        }
    }

    @Test("room, mute and volume requests go over the wire and back", arguments: [
        ControlCommand.room(name: nil), .room(name: "study"), .room(name: ""), .roomReset, .mute, .unmute,
        .volume(percent: nil), .volume(percent: 0), .volume(percent: 100),
    ])
    func wire(command: ControlCommand) throws {
        let line = ControlProtocol.encode(command, id: "7")
        #expect(try ControlProtocol.decode(Array(line.utf8)).get().command == command)
    }

    @Test("bad room and volume requests are invalid_request saying what is expected", arguments: [
        (#"{"v":1,"id":1,"cmd":"room","name":7}"#, #""name" must be a string"#),
        (#"{"v":1,"id":1,"cmd":"room","name":"\#(String(repeating: "r", count: 41))"}"#, "at most 40 characters"),
        (#"{"v":1,"id":1,"cmd":"room","name":"den","reset":true}"#, "not both"),
        (#"{"v":1,"id":1,"cmd":"room","reset":"yes"}"#, #""reset" must be true or false"#),
        (#"{"v":1,"id":1,"cmd":"volume","percent":101}"#, "from 0 to 100"),
        (#"{"v":1,"id":1,"cmd":"volume","percent":50.5}"#, "whole number"),
        (#"{"v":1,"id":1,"cmd":"volume","percent":"50"}"#, "whole number"),
    ])
    func badRequests(line: String, message: String) {
        guard case .failure(let rejection) = ControlProtocol.decode(Array(line.utf8)) else {
            Issue.record("\(line) was accepted")
            return
        }
        #expect(rejection.error.code == .invalidRequest)
        #expect(rejection.error.message.contains(message), "\(rejection.error.message)")
    }

    @Test("parlourctl's sentences for room, mute and volume")
    func sentences() {
        func text(_ command: ControlCommand, _ response: JSONValue) -> String { ResultText.render(command, .completed(response), json: false).out }
        let set: JSONValue = ["room": "study", "configRoom": "hall", "source": "parlourctl"]
        #expect(text(.room(name: "study"), set) == "The room is now study; the next request says so.\n")
        #expect(text(.room(name: nil), set) == "study (set with parlourctl room; the config's room is hall)\n")
        #expect(text(.room(name: nil), ["room": "hall", "configRoom": "hall", "source": "config"]) == "hall\n")
        #expect(text(.roomReset, ["room": "hall", "configRoom": "hall", "source": "config"]) == "The config's room counts again: hall.\n")
        #expect(text(.mute, ["muted": true, "changed": true]).hasPrefix("Muted: the microphone is closed"))
        #expect(text(.mute, ["muted": true, "changed": false]).hasPrefix("Already muted"))
        #expect(text(.volume(percent: nil), ["percent": 40, "card": "hw:1", "control": "PCM"]) == "Volume: 40% (PCM on hw:1)\n")
    }
}
