// No request follows a redirect: a hostile server answers every HTTP route and the
// /listen handshake with a 3xx pointing at a second server, which has the house's
// token too and logs every credential it is shown. Whatever the status, the second
// server is never contacted, the daemon says `server_refused` naming the status and
// the origin only, and it asks the pinned server again after its back-off.
import Foundation
import Testing
@testable import Satellite
import SatelliteCore

@Suite("redirects are answers, never followed", .serialized, .timeLimit(.minutes(3)))
struct RedirectTests {
    static let statuses = [301, 302, 303, 307, 308]

    @Test("the HTTP client returns each 3xx with where it points, and nothing reaches the server behind it", arguments: statuses)
    func httpClient(status: Int) async throws {
        let behind = try await TestServer.start()
        defer { behind.stop() }
        let front = try await TestServer.start(token: behind.token,
                                               knobs: ["redirectStatus": .number(Double(status)), "redirectTo": .string(behind.url)])
        defer { front.stop() }
        let client = ParlourClient(baseURL: front.url, token: behind.token, http: HTTPClient())
        do {
            try await client.models()
            Issue.record("a \(status) was taken as an answer")
        } catch {
            #expect(error.code == .serverRefused)
            #expect(error.message.contains("status \(status)) to \(behind.url),"), "\(error.message)")
            #expect(!error.message.contains(behind.url + "/"))
        }
        #expect(try await behind.requests().isEmpty)
        #expect(try await front.requests().map { $0["status"] } == [.number(Double(status))])
    }

    @Test("the /listen handshake gets refused with the status and origin, and is not followed", arguments: statuses)
    func handshake(status: Int) async throws {
        let behind = try await TestServer.start()
        defer { behind.stop() }
        // A relative Location points at the front server itself; an absolute one elsewhere.
        let front = try await TestServer.start(token: behind.token,
                                               knobs: ["redirectStatus": .number(Double(status)), "redirectTo": .string(behind.url)])
        defer { front.stop() }
        let url = "ws://127.0.0.1:\(front.port)/listen?client=hall"
        let client = WebSocketClient.connect(url: url, headers: ["Authorization": "Bearer \(behind.token)"], maxMessage: 1 << 20)
        var last: WebSocketEvent?
        for await event in client.events { last = event }
        guard case .refused(let error)? = last else {
            Issue.record("the handshake ended with \(String(describing: last))")
            return
        }
        #expect(error.code == .serverRefused)
        #expect(error.message.contains("answered /listen with a redirect (status \(status)) to \(behind.url),"), "\(error.message)")
        #expect(try await behind.requests().isEmpty)
        let tried = try await front.requests()
        #expect(tried.count == 1 && tried.first?["path"] == "/listen" && tried.first?["status"] == .number(Double(status)))
    }

    @Test("the daemon: ask and the stream are server_refused naming status and origin, retried, never followed", arguments: statuses)
    func daemon(status: Int) async throws {
        let behind = try await TestServer.start()
        defer { behind.stop() }
        let front = try await TestServer.start(token: behind.token,
                                               knobs: ["redirectStatus": .number(Double(status)), "redirectTo": .string(behind.url)])
        defer { front.stop() }
        let config: JSONValue = ["name": "hall-pi", "transport": "stream", "wake": "push",
                                 "server": ["url": .string(front.url), "retryMs": 1000],
                                 "audio": ["input": "testmic", "output": "testspeaker"]]
        let daemon = try await DaemonHarness.start(config: config, token: behind.token)
        let watch = try await Watcher.start(daemon)

        let asked = try await daemon.result("ask", "who is there")
        #expect(asked["error"] == "server_refused")
        let message = asked["message"]?.stringValue ?? ""
        #expect(message.contains("answered /ask with a redirect (status \(status)) to \(behind.url),"), "\(message)")
        // The stream: refused, said with the same words, and asked again after the back-off.
        let notice = await watch.notice("Disconnected from the server's /listen", "answered /listen with a redirect (status \(status)) to \(behind.url),")
        #expect(notice?["reason"] == "server_refused")
        // The next attempt, after the back-off, says the same (at debug, as a repeat).
        let again = await watch.notice("Disconnected from the server's /listen", "(status \(status))")
        #expect(again?["reason"] == "server_refused")
        #expect(await daemon.stop() == 0)

        let seen = try await behind.requests()
        #expect(seen.isEmpty, "the server behind the redirect was sent \(seen)")
        let handshakes = try await front.requests().filter { $0["path"] == "/listen" }
        #expect(handshakes.count >= 2)
        #expect(handshakes.allSatisfy { $0["status"] == .number(Double(status)) })
        #expect(!daemon.stderr.contains(behind.token))
        RedirectFigures.record(status: status, handshakes: handshakes.count, wrongPlace: seen.filter { $0["credential"] != .null }.count)
    }
}

/// The figures for the report: redirect cases tried and the requests that carried the token elsewhere.
enum RedirectFigures {
    static func record(status: Int, handshakes: Int, wrongPlace: Int) {
        print("FIGURE redirect status=\(status) handshakes=\(handshakes) tokenToWrongPlace=\(wrongPlace)")
    }
}
