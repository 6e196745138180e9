// https trusted on first use, from outside: a self-signed test server (a certificate
// made now with openssl), `parlourctl use` without a terminal and then with --yes,
// and the same port later answered by a server with another key. What each server
// was sent comes from its own log: the server with the other key must see nothing.
import Foundation
import Testing
import SatelliteCore

@Suite("https keys are shown, pinned and held to", .serialized, .timeLimit(.minutes(2)))
struct ServerKeyTests {
    static func pinFile(_ daemon: DaemonHarness) throws -> Pin {
        let file = daemon.stateDirectory + "/pin.json"
        return try Pin.decode(try FileSystem.read(file), file: file)
    }

    @Test("a self-signed server's key is shown and asked about, pinned with --yes, and another key later gets nothing")
    func trustOnFirstUse() async throws {
        let first = try TestCertificate.make()
        let server = try await TestServer.start(tls: first)
        let config: JSONValue = ["name": "hall-pi", "transport": "stream", "wake": "push", "server": ["retryMs": 1000],
                                 "audio": ["input": "testmic", "output": "testspeaker"]]
        let daemon = try await DaemonHarness.start(config: config, token: server.token)
        let watch = try await Watcher.start(daemon)

        // No terminal to ask on: the key is shown and nothing is pinned; only /health was asked, without the token.
        let asked = try await daemon.ctl("use", server.url)
        #expect(asked.status == 1)
        #expect(asked.err.contains(first.key) || asked.out.contains(first.key), "\(asked.out) \(asked.err)")
        let unconfirmed = try await daemon.result("use", server.url)
        #expect(unconfirmed["error"] == "server_key_unconfirmed")
        #expect(unconfirmed["key"] == .string(first.key))
        #expect(!FileManager.default.fileExists(atPath: daemon.stateDirectory + "/pin.json"))
        let probes = try await server.requests()
        #expect(!probes.isEmpty && probes.allSatisfy { $0["path"] == "/health" && $0["credential"] == .null })

        // --yes takes the key shown: pinned, and requests and the wss stream pass the key check.
        let used = try await daemon.ctl("use", "--yes", server.url)
        #expect(used.status == 0, "\(used.out) \(used.err)")
        #expect(try Self.pinFile(daemon).key == first.key)
        #expect(try await daemon.result("ask", "are you there")["status"] == "completed")
        #expect(await watch.notice("Connected to the server's /listen") != nil)
        #expect(try await server.requests().contains { $0["path"] == "/ask" && $0["tokenOk"] == true })

        // The same address now shows another key: refused with server_key_changed, and nothing reaches it.
        let port = server.port
        await server.shutdown()
        let second = try TestCertificate.make()
        #expect(second.key != first.key)
        let impostor = try await TestServer.start(token: server.token, tls: second, port: port)
        defer { impostor.stop() }
        let refused = try await daemon.result("ask", "who are you")
        #expect(refused["error"] == "server_key_changed", "\(refused)")
        #expect(refused["message"]?.stringValue?.contains(first.key) == true)
        let stream = await watch.notice("Disconnected from the server's /listen", "pinned with the key \(first.key)")
        #expect(stream?["reason"] == "server_key_changed")
        #expect(await daemon.stop() == 0)
        let seen = try await impostor.requests()
        #expect(seen.isEmpty, "the server with another key was sent \(seen)")
        #expect(!daemon.stderr.contains(server.token))
        print("FIGURE keyChanged cases=1 tokenToWrongPlace=\(seen.filter { $0["credential"] != .null }.count)")
    }
}
