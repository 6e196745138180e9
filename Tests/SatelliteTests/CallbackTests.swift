// Callbacks from a real daemon to the test server's callback sink: each outcome,
// the caller's query kept, the response decoding back to the result's, no token
// and no Authorization header, a caller that went away or did not wait, retries
// with back-off, a receiver that is down, and shutdown. Two overlapping
// listens with callbacks are in RequestTests.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("Callbacks carry every result to the caller's URL", .serialized, .timeLimit(.minutes(2)))
struct CallbackTests {
    func config(_ server: TestServer, _ audio: JSONValue = ["input": "testmic", "output": "testspeaker"]) -> JSONValue {
        ["name": "study", "room": "study", "transport": "record", "server": ["url": .string(server.url)], "audio": audio]
    }

    /// The query's names and values, %-escapes undone.
    func items(_ query: String?) -> [String: String] {
        var items: [String: String] = [:]
        for item in URLComponents(string: "http://x/?" + (query ?? ""))?.queryItems ?? [] { items[item.name] = item.value ?? "" }
        return items
    }

    /// A loopback port nothing listens on, and its socket: bound but never listening, so a
    /// connection is refused, and held until the caller closes it. Closed at once, the port could
    /// go to another test's server in a parallel pass.
    func closedPort() throws -> (port: Int, socket: Int32) { try loopbackPort(listening: false) }

    /// A loopback port that takes connections (the kernel completes them into its backlog) and never
    /// answers: each try waits for its whole timeout, so a delivery to it stays under way for tens
    /// of seconds, not the 7 s a refused one takes.
    func silentPort() throws -> (port: Int, socket: Int32) { try loopbackPort(listening: true) }

    private func loopbackPort(listening: Bool) throws -> (port: Int, socket: Int32) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, !listening || listen(fd, 16) == 0 else {
            close(fd)
            throw TestFailure("cannot bind\(listening ? " and listen on" : "") a loopback port: \(String(cString: strerror(errno)))")
        }
        return (Int(UInt16(bigEndian: address.sin_port)), fd)
    }

    @Test("a completed listen calls back with its response in base64url after the caller's query, and never with the token")
    func completed() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 300])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server), token: server.token,
                                                   mic: try await Speech.raw("turn off the kitchen lights"))
        let watcher = try await Watcher.start(daemon)
        let done = try await daemon.ctl("--json", "listen", "--callback", server.callbackURL("?ctx=abc&n=1").text)
        #expect(done.status == 0)
        let result = try JSONValue.parse(done.out)
        #expect(result["status"] == "completed")

        let delivered = await watcher.notice("Callback delivered.")
        #expect(delivered?["callback_url"] == .string(server.url + "/_test/callback"))
        #expect(delivered?["attempt"] == "1")
        #expect(delivered?["outcome"] == "HTTP 200")
        let calls = try await server.callbacks()
        try #require(calls.count == 1)
        #expect(calls[0]["method"] == "GET")
        let query = try #require(calls[0]["query"]?.stringValue)
        #expect(query.hasPrefix("ctx=abc&n=1&status=completed&response="))
        let response = try #require(Base64URL.decode(items(query)["response"] ?? ""))
        #expect(try JSONValue.parse(response) == result["response"])
        #expect(result["response"]?["heard"] == "turn off the kitchen lights")

        // Nothing that could be a credential reached the receiver, and the journal keeps the caller's query to itself.
        #expect(calls[0]["tokenSeen"] == false)
        let headers = calls[0]["headers"]?.objectValue ?? [:]
        #expect(!headers.keys.contains { ["authorization", "cookie", "proxy-authorization"].contains($0.lowercased()) })
        #expect(headers["User-Agent"]?.stringValue?.hasPrefix("parlour-satellite/") == true)
        await daemon.stop()
        #expect(!daemon.stderr.contains("ctx=abc"))
        #expect(!daemon.stderr.contains(server.token))
    }

    @Test("a cancelled listen and a failed ask call back with their reason and their code")
    func cancelledAndError() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let audio: JSONValue = ["input": "testmic", "output": "testspeaker", "leadingSilenceMs": 500]
        let daemon = try await DaemonHarness.start(config: config(server, audio), token: server.token, mic: Speech.silence(5))
        let watcher = try await Watcher.start(daemon)

        let nothing = try await daemon.result("listen", "--callback", server.callbackURL("?which=listen").text)
        #expect(nothing["reason"] == "nothing_heard")
        #expect(await watcher.notice("Callback delivered.")?["result"] == "cancelled")

        try await server.setKnobs(["status": 500, "errorText": "the kitchen is on fire"])
        let refused = try await daemon.result("ask", "--callback", server.callbackURL("?which=ask").text, "what", "time", "is", "it")
        #expect(refused["error"] == "server_refused")
        #expect(await watcher.notice("Callback delivered.")?["result"] == "error")

        let calls: [String] = try await server.callbacks().compactMap { $0["query"]?.stringValue }
        #expect(calls == ["which=listen&status=cancelled&reason=nothing_heard", "which=ask&status=error&error=server_refused"])
        await daemon.stop()
    }

    @Test("a caller that goes right after sending, and one that does not wait, still get their callbacks")
    func callerGone() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 300, "heardText": "what is the weather"])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server), token: server.token,
                                                   mic: try await Speech.raw("what is the weather"))
        let watcher = try await Watcher.start(daemon)

        // A listen whose caller hangs up at once is carried through to the answer.
        let caller = try SocketClient(path: daemon.socket)
        caller.request(.listen(hold: false), id: "gone", callback: server.callbackURL("?who=gone"))
        caller.disconnect()
        #expect(await watcher.notice("Callback delivered.")?["command"] == "listen")
        let gone = try #require(try await server.callbacks().first)
        let heard = items(gone["query"]?.stringValue)
        #expect(heard["who"] == "gone")
        #expect(heard["status"] == "completed")
        let response = try JSONValue.parse(try #require(Base64URL.decode(heard["response"] ?? "")))
        #expect(response["heard"] == "what is the weather")
        #expect(response["via"] == "local")

        // --no-wait: parlourctl is told the request was accepted while the server is still thinking about it.
        try await server.setKnobs(["delayMs": 5000])
        let accepted = try await daemon.ctl("--json", "ask", "--no-wait", "--callback", server.callbackURL("?who=nowait").text,
                                            "is", "it", "raining")
        #expect(accepted.status == 0)
        #expect(try JSONValue.parse(accepted.out) == ["status": "completed", "response": ["accepted": true, "id": "1"]])
        #expect(try await server.callbacks().count == 1)
        let text = try await daemon.ctl("ask", "--no-wait", "--callback", server.callbackURL("?who=nowait2").text, "hello")
        #expect(text.out == "Accepted: the satellite will call the callback URL when the request ends.\n")
        _ = await watcher.notice("Callback delivered.")
        _ = await watcher.notice("Callback delivered.")
        let later = try await server.callbacks().dropFirst().map { items($0["query"]?.stringValue) }
        #expect(Set(later.compactMap { $0["who"] }) == ["nowait", "nowait2"])
        #expect(later.allSatisfy { $0["status"] == "completed" })
        let reply = later.first { $0["who"] == "nowait" }?["response"].flatMap(Base64URL.decode)
        #expect(try reply.map(JSONValue.parse)?["reply"] == "You asked: is it raining")
        await daemon.stop()
    }

    @Test("a receiver that answers 503 is tried again after a second, and then gets the result")
    func retried() async throws {
        let server = try await TestServer.start(knobs: ["callbackStatuses": [503]])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server), token: server.token)
        let watcher = try await Watcher.start(daemon)
        let done = try await daemon.result("ask", "--callback", server.callbackURL("?r=1").text, "hello")
        #expect(done["status"] == "completed")
        let failed = await watcher.notice("Callback attempt failed; trying again.")
        #expect(failed?["outcome"] == "HTTP 503")
        #expect(failed?["attempt"] == "1")
        let delivered = await watcher.notice("Callback delivered.")
        #expect(delivered?["attempt"] == "2")
        let calls = try await server.callbacks()
        #expect(calls.map { $0["status"] } == [503, 200])
        #expect(calls[0]["query"] == calls[1]["query"])
        let gap = (calls[1]["t"]?.numberValue ?? 0) - (calls[0]["t"]?.numberValue ?? 0)
        #expect(gap >= 999, "the second try came \(gap) ms after the first")
        await daemon.stop()
    }

    @Test("a receiver that keeps failing gets four tries, 1 s, 2 s and 4 s apart, and the journal says it was not delivered")
    func givesUp() async throws {
        let server = try await TestServer.start(knobs: ["callbackStatuses": [500, 502, 503, 504, 200]])
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server), token: server.token)
        let watcher = try await Watcher.start(daemon)
        #expect(try await daemon.result("ask", "--callback", server.callbackURL().text, "hello")["status"] == "completed")
        let last = await watcher.notice("Callback not delivered")
        #expect(last?["attempt"] == "4")
        #expect(last?["outcome"] == "HTTP 504")
        #expect(last?["priority"] == "warning")
        let times = try await server.callbacks().compactMap { $0["t"]?.numberValue }
        #expect(times.count == 4)
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(gaps.count == 3 && gaps[0] >= 999 && gaps[1] >= 1999 && gaps[2] >= 3999, "gaps \(gaps)")

        // Nobody listening at all: the same four tries, each failing to connect, then the same line.
        let (port, held) = try closedPort()
        defer { close(held) }
        #expect(try await daemon.result("ask", "--callback", "http://127.0.0.1:\(port)/cb?x=1", "hello")["status"] == "completed")
        var attempts: [String] = []
        while let notice = await watcher.notice("Callback"), let attempt = notice["attempt"]?.stringValue {
            attempts.append(attempt)
            #expect(notice["callback_url"] == .string("http://127.0.0.1:\(port)/cb"))
            if notice["message"] != "Callback attempt failed; trying again." {
                #expect(notice["message"] == "Callback not delivered: every attempt failed.")
                #expect(notice["outcome"]?.stringValue?.isEmpty == false)
                break
            }
        }
        #expect(attempts == ["1", "2", "3", "4"])
        await daemon.stop()
        #expect(daemon.stderr.contains("warning: Callback not delivered: every attempt failed."))
    }

    @Test("at shutdown a request still running is called back shutting_down, and a delivery still retrying is dropped with a journal line")
    func shutdown() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let daemon = try await DaemonHarness.start(config: config(server), token: server.token)
        let watcher = try await Watcher.start(daemon)
        // A receiver that never answers: the delivery is still trying when the daemon stops, however
        // slowly a loaded machine runs the steps between (a refused one had given up within 7 s).
        let (port, held) = try silentPort()
        defer { close(held) }
        #expect(try await daemon.result("ask", "--callback", "http://127.0.0.1:\(port)/cb", "hello")["status"] == "completed")
        #expect(await watcher.notice("Callback attempt failed; trying again.")?["attempt"] == "1")
        try await server.setKnobs(["delayMs": 30000])
        let accepted = try await daemon.result("ask", "--no-wait", "--callback", server.callbackURL("?who=slow").text, "slow", "question")
        #expect(accepted["response"]?["accepted"] == true)

        #expect(await daemon.stop() == 0)
        let calls: [String] = try await server.callbacks().compactMap { $0["query"]?.stringValue }
        #expect(calls == ["who=slow&status=cancelled&reason=shutting_down"])
        #expect(daemon.stderr.contains("warning: Callback dropped at shutdown."))
        #expect(daemon.stderr.contains("callback_url=http://127.0.0.1:\(port)/cb"))
    }

    @Test("a callback that is not http(s) is refused: by parlourctl before it sends, and by the daemon")
    func refused() async throws {
        // No daemon at this socket: a usage error comes before any attempt to reach it (exit 2, not 4).
        let dir = try Package.temporaryDirectory("cb")
        let ctl = try await Subprocess.run(Package.binDirectory + "/parlourctl",
                                           ["--socket", dir.path + "/none.sock", "listen", "--callback", "file:///etc/passwd"])
        #expect(ctl.status == 2)
        #expect(ctl.err.hasPrefix("Error: Invalid value for '--callback <url>': file:///etc/passwd is not an http:// or https://"))

        let daemon = try await DaemonHarness.start(config: ["transport": "record"])
        let client = try SocketClient(path: daemon.socket)
        client.send(#"{"v":1,"id":"f","cmd":"ask","text":"hi","callback":"file:///etc/passwd"}"# + "\n")
        let file = await client.result("f")
        #expect(file?["error"] == "invalid_request")
        #expect(file?["message"]?.stringValue?.contains("http:// or https://") == true)
        client.send(#"{"v":1,"id":"s","cmd":"status","callback":"http://127.0.0.1:9/cb"}"# + "\n")
        #expect(await client.result("s")?["error"] == "invalid_request")
        client.send(#"{"v":1,"id":"w","cmd":"listen","wait":false}"# + "\n")
        #expect(await client.result("w")?["error"] == "invalid_request")

        // The version check, as INTERFACE.md has it, and the versions the daemon speaks.
        for (line, code) in [(#"{"v":"1","id":"a","cmd":"status"}"#, "unsupported_version"),
                             (#"{"v":1.5,"id":"a","cmd":"status"}"#, "unsupported_version"),
                             (#"{"id":"a","cmd":"status"}"#, "invalid_request")] {
            client.send(line + "\n")
            let answer = await client.result("a")
            #expect(answer?["error"] == .string(code), "\(line)")
            #expect(answer?["message"]?.stringValue?.contains("speaks version 1") == true)
            #expect(answer?["v"] == 1)
        }
        client.request(.version, id: "v")
        #expect(await client.result("v")?["response"]?["controlVersions"] == [1])
        #expect(await daemon.stop() == 0)
    }
}
