import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("what a state hook is told")
struct StateChangeTests {
    let change = StateChange(state: .listening, previous: .idle, room: "kitchen", serverName: "Parlour on den",
                             at: WallTime(seconds: 1_790_000_000))

    @Test("the environment is the daemon's, without the token or where it is, plus the change")
    func environment() {
        let daemon = ["PATH": "/usr/bin:/bin", "HOME": "/var/lib/parlour-satellite", "LANG": "C.UTF-8",
                      "PARLOUR_TOKEN": "secret", "CREDENTIALS_DIRECTORY": "/run/credentials/parlour-satellite.service",
                      "NOTIFY_SOCKET": "/run/systemd/notify", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "12",
                      "PARLOUR_STATE": "stale"]
        let environment = change.environment(inheriting: daemon, socket: "/run/parlour-satellite/control.sock")
        #expect(environment["PARLOUR_STATE"] == "listening")
        #expect(environment["PARLOUR_PREVIOUS_STATE"] == "idle")
        #expect(environment["PARLOUR_ROOM"] == "kitchen")
        #expect(environment["PARLOUR_SERVER_NAME"] == "Parlour on den")
        #expect(environment["PARLOUR_SATELLITE_SOCKET"] == "/run/parlour-satellite/control.sock")
        #expect(environment["PATH"] == "/usr/bin:/bin")
        #expect(environment["HOME"] == "/var/lib/parlour-satellite")
        #expect(environment["LANG"] == "C.UTF-8")
        for withheld in ["PARLOUR_TOKEN", "CREDENTIALS_DIRECTORY", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] {
            #expect(environment[withheld] == nil, "\(withheld) reached the hook")
        }
        #expect(!environment.values.contains("secret"))
    }

    @Test("with no PATH the hook gets a default one, and an unknown server is an empty name")
    func defaults() {
        var unknown = change
        unknown.serverName = nil
        let environment = unknown.environment(inheriting: [:], socket: "/s")
        #expect(environment["PATH"] == HookCommand.defaultSearchPath)
        #expect(environment["PARLOUR_SERVER_NAME"] == "")
    }

    @Test("stdin holds the state event as watch prints it, with the room, the server and the time")
    func json() throws {
        let json = change.json
        #expect(json["v"] == 1)
        #expect(json["event"] == "state")
        #expect(json["state"] == "listening")
        #expect(json["previous"] == "idle")
        #expect(json["room"] == "kitchen")
        #expect(json["serverName"] == "Parlour on den")
        #expect(json["at"] == "2026-09-21T14:13:20Z")
        #expect(json["message"] == "State listening.")
        #expect(try JSONValue.parse(Data(json.text.utf8)) == json)
    }
}
