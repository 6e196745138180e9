// The control socket from a client's side: bad lines get error results, and
// neither the connection nor the daemon goes down because of them.
import Foundation
import Testing
import SatelliteCore

@Suite("The control socket survives bad input", .timeLimit(.minutes(1)))
struct ControlSocketTests {
    @Test("not JSON, too long, unknown, another version: each gets an error and the connection stays up")
    func badLines() async throws {
        let daemon = try await DaemonHarness.start(config: ["transport": "record"])
        let client = try SocketClient(path: daemon.socket)

        client.send("this is not json\n")
        let notJSON = await client.next { $0["status"] != nil }
        #expect(notJSON?["error"] == "invalid_request")
        #expect(notJSON?["message"]?.stringValue?.contains("not JSON") == true)

        client.send(String(repeating: "x", count: 70_000) + "\n")
        let tooLong = await client.next { $0["status"] != nil }
        #expect(tooLong?["error"] == "invalid_request")
        #expect(tooLong?["message"]?.stringValue?.contains("64 KiB") == true)

        client.send(#"{"v":1,"id":"u","cmd":"fly"}"# + "\n")
        let unknown = await client.result("u")
        #expect(unknown?["error"] == "unknown_command")

        client.send(#"{"v":2,"id":"w","cmd":"status"}"# + "\n")
        let version = await client.result("w")
        #expect(version?["error"] == "unsupported_version")
        #expect(version?["message"]?.stringValue?.contains("speaks version 1") == true)

        client.send(#"{"v":1,"id":"a","cmd":"ask","text":""}"# + "\n")
        #expect(await client.result("a")?["error"] == "invalid_request")

        client.request(.status, id: "s")
        let status = await client.result("s")
        #expect(status?["status"] == "completed")
        #expect(status?["response"]?["state"] == "unpaired")
        #expect(await daemon.stop() == 0)
    }

    @Test("half a line and a disconnect leave the daemon answering")
    func halfLine() async throws {
        let daemon = try await DaemonHarness.start(config: ["transport": "record"])
        do {
            let client = try SocketClient(path: daemon.socket)
            client.send(#"{"v":1,"id":"x","cm"#)
        }
        let done = try await daemon.ctl("status")
        #expect(done.status == 0)
        #expect(await daemon.stop() == 0)
    }

    @Test("a request sent before the client half-closes still gets its result")
    func halfClose() async throws {
        let daemon = try await DaemonHarness.start(config: ["transport": "record"])
        let client = try SocketClient(path: daemon.socket)
        client.request(.version, id: "v")
        client.closeWriting()
        let result = await client.result("v")
        #expect(result?["response"]?["control"] == 1)
        await daemon.stop()
    }

    @Test("parlourctl exits 4 when no daemon listens, and 2 on a usage error")
    func exitCodes() async throws {
        let dir = try Package.temporaryDirectory("ctl")
        let missing = try await Subprocess.run(Package.binDirectory + "/parlourctl", ["--socket", dir.path + "/none.sock", "status"])
        #expect(missing.status == 4)
        #expect(missing.err.contains("not running"))
        let usage = try await Subprocess.run(Package.binDirectory + "/parlourctl", ["--jsno", "status"])
        #expect(usage.status == 2)
        #expect(usage.err.hasPrefix("Error:"))
    }
}
