// When the local wake word listens and what counts as a wake (WakeWordGate), and
// where its engine is found (WakeWordFolder).
import Testing
@testable import ControlCore
@testable import SatelliteCore

/// The gate's answer to a model that heard its word at `ms` (outside #expect, which cannot mutate).
private func wakes(_ gate: inout WakeWordGate, at ms: Int64) -> Bool { gate.heard(atMs: ms) }

@Suite struct WakeWordGateTests {
    @Test("it listens only when nothing else has the room", arguments: SatelliteState.allCases)
    func listensIn(state: SatelliteState) {
        var gate = WakeWordGate(refractoryMs: 2000)
        gate.stateChanged(state)
        let listens = gate.listens
        #expect(listens == [.idle, .offline, .unpaired].contains(state), "\(state)")
        let woke = gate.heard(atMs: 10_000)
        #expect(woke == listens)
    }

    @Test("a wake starts one turn: the ear is shut until it ends, and the word is ignored for refractoryMs after the wake")
    func oneTurnAndRefractory() {
        var gate = WakeWordGate(refractoryMs: 2000)
        gate.stateChanged(.idle)
        #expect(wakes(&gate, at: 1_000))
        #expect(!gate.listens, "the turn under way has the room")
        #expect(!wakes(&gate, at: 1_100))
        gate.turnEnded()
        #expect(gate.listens)
        #expect(!wakes(&gate, at: 2_999), "within 2000 ms of the wake")
        #expect(wakes(&gate, at: 3_000))
        gate.turnEnded()
        var none = WakeWordGate(refractoryMs: 0)
        none.stateChanged(.idle)
        #expect(wakes(&none, at: 5))
        none.turnEnded()
        #expect(wakes(&none, at: 5))
    }

    /// CLOCK_MONOTONIC in ms, as the ear gives it: past Int32 (24.9 days), UInt32 (49.7 days), 100 years, and the
    /// last millisecond a UInt64 of nanoseconds can hold.
    @Test("the refractory time holds at any uptime",
          arguments: [0, 1 << 31, 1 << 32, 100 * 365 * 86_400_000, Int64(UInt64.max / 1_000_000) - 2_000] as [Int64])
    func refractoryAtAnyUptime(ms: Int64) {
        var gate = WakeWordGate(refractoryMs: 2000)
        gate.stateChanged(.idle)
        #expect(wakes(&gate, at: ms))
        gate.turnEnded()
        #expect(!wakes(&gate, at: ms + 1_999))
        #expect(wakes(&gate, at: ms + 2_000))
    }

    @Test("muted, speaking or listening, a model's wake is not taken; idle again, it is")
    func afterStates() {
        var gate = WakeWordGate(refractoryMs: 2000)
        for state in [SatelliteState.muted, .speaking, .listening, .thinking] {
            gate.stateChanged(state)
            #expect(!wakes(&gate, at: 100))
        }
        gate.stateChanged(.idle)
        #expect(wakes(&gate, at: 100), "no refractory time from wakes that were not taken")
    }
}

@Suite struct WakeWordBargeInTests {
    @Test("with the echo cancelled it also listens while an answer plays, its own turn's too", arguments: SatelliteState.allCases)
    func listensOverAnAnswer(state: SatelliteState) {
        var gate = WakeWordGate(refractoryMs: 2000, bargeIn: true)
        gate.stateChanged(state)
        #expect(gate.listens == [.idle, .offline, .unpaired, .speaking].contains(state), "\(state)")
    }

    @Test("a wake over its own turn's answer starts a second turn; the first ending does not open the ear while the second listens")
    func overItsOwnAnswer() {
        var gate = WakeWordGate(refractoryMs: 2000, bargeIn: true)
        gate.stateChanged(.idle)
        #expect(wakes(&gate, at: 1_000))
        gate.stateChanged(.listening)
        #expect(!gate.listens)
        gate.stateChanged(.speaking)
        #expect(gate.listens, "the answer plays")
        #expect(!wakes(&gate, at: 2_500), "within refractoryMs of the wake")
        #expect(wakes(&gate, at: 3_500))
        gate.stateChanged(.listening)
        gate.turnEnded()
        gate.stateChanged(.idle)
        #expect(!gate.listens, "the second turn is still under way")
        gate.turnEnded()
        #expect(gate.listens)
    }
}

@Suite struct WakeWordFolderTests {
    @Test("the environment wins, then a build folder beside the executable, then the installed folder")
    func resolve() {
        let build = "/src/sat/.build/wakeword/lib/libtensorflowlite_c.so"
        func resolve(_ environment: [String: String], _ executable: String?, _ files: Set<String>) -> String {
            WakeWordFolder.resolve(environment: environment, executable: executable) { files.contains($0) }.path
        }
        #expect(resolve(["PARLOUR_SATELLITE_WAKEWORD": "/tmp/ww"], "/usr/bin/parlour-satellite", []) == "/tmp/ww")
        #expect(resolve([:], "/src/sat/.build/x86_64-unknown-linux-gnu/debug/parlour-satellite", [build]) == "/src/sat/.build/wakeword")
        #expect(resolve([:], "/src/sat/.build/debug/parlour-satellite", [build]) == "/src/sat/.build/wakeword")
        #expect(resolve([:], "/src/sat/.build/debug/parlour-satellite", []) == "/usr/lib/parlour-satellite")
        #expect(resolve(["PARLOUR_SATELLITE_WAKEWORD": ""], "/usr/bin/parlour-satellite", []) == "/usr/lib/parlour-satellite")
        #expect(resolve([:], nil, []) == "/usr/lib/parlour-satellite")
    }

    @Test("a shipped model is in the folder's models, a path is itself")
    func manifest() {
        let folder = WakeWordFolder(path: "/usr/lib/parlour-satellite")
        #expect(folder.library == "/usr/lib/parlour-satellite/lib/libtensorflowlite_c.so")
        #expect(folder.manifest(for: "alexa") == "/usr/lib/parlour-satellite/models/alexa.json")
        #expect(folder.manifest(for: "/opt/words/hey.json") == "/opt/words/hey.json")
    }
}

@Suite struct WakeWordStatusTests {
    @Test("status has wakeWord only with a local wake word; a wake is an event with the model and probability")
    func shapes() {
        var status = StatusModel(name: "pi", room: "", transport: "stream", wake: "server", version: "1",
                                 microphone: "default", speaker: "default")
        #expect(status.json["wakeWord"] == nil)
        status.apply(.wakeWord(WakeWordHealth(model: "okay_nabu", ok: true)))
        #expect(status.json["wakeWord"] == ["model": "okay_nabu", "ok": true, "error": .null])
        status.apply(.wakeWord(WakeWordHealth(model: "okay_nabu", ok: false, error: "it failed")))
        #expect(status.json["wakeWord"]?["ok"] == false)
        #expect(status.json["wakeWord"]?["error"] == "it failed")

        let wake = SatelliteEvent.wake(model: "alexa", probability: 0.9375)
        #expect(wake.json["event"] == "wake")
        #expect(wake.json["model"] == "alexa")
        #expect(wake.json["probability"] == 0.9375)
        #expect(wake.message == "Heard the wake word (alexa, probability 0.938).")
    }
}
