// The project's own Parlour server (Tests/Server/parlour_test_server.py), a
// strict aiohttp peer, started for a test on a free loopback port. Knobs make
// it misbehave; its request log shows what the satellite sent.
import Foundation
import TestSupport
import Synchronization
@testable import Satellite
import SatelliteCore

final class TestServer: Sendable {
    let port: Int
    let token: String
    /// The address it listens on (127.0.0.1, or 198.51.100.1 inside scripts/netns-run).
    let host: String
    private let process: Process
    /// Serving https and wss with a certificate (see TestCertificate).
    let secure: Bool

    var url: String { "\(secure ? "https" : "http")://\(host):\(port)" }

    static func start(token: String = "test-token-\(UUID().uuidString.prefix(8))", knobs: JSONValue? = nil,
                      host: String = "127.0.0.1", name: String = "Parlour on den",
                      tls: TestCertificate? = nil, port fixedPort: Int = 0) async throws -> TestServer {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Package.python)
        var arguments = [Package.root.appendingPathComponent("Tests/Server/parlour_test_server.py").path,
                         "--host", host, "--port", String(fixedPort), "--token", token, "--name", name]
        if let tls { arguments += ["--cert", tls.certificate, "--key", tls.privateKey] }
        if let knobs { arguments += ["--knobs", knobs.text] }
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.standardError
        let handle = out.fileHandleForReading
        // Exactly one of "LISTENING <port>" and the server's exit resumes the wait: an
        // end of file alone is not enough, since other children may hold the pipe open.
        let waiter = Mutex<CheckedContinuation<Int, any Error>?>(nil)
        let finish: @Sendable (Result<Int, any Error>) -> Void = { result in
            waiter.withLock { w in
                w?.resume(with: result)
                w = nil
            }
        }
        process.terminationHandler = { ended in
            finish(.failure(TestFailure("the test server exited (status \(ended.terminationStatus)) before listening")))
        }
        let port: Int = try await withCheckedThrowingContinuation { continuation in
            waiter.withLock { $0 = continuation }
            do {
                try process.run()
                TestChildren.tie(process)
            } catch {
                finish(.failure(error))
                return
            }
            // A blocking read runs on a thread of its own, never on the pool.
            Thread {
                var text = ""
                while true {
                    let data = handle.availableData
                    if data.isEmpty { return }
                    text += String(decoding: data, as: UTF8.self)
                    if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("LISTENING ") }),
                       let port = Int(line.dropFirst("LISTENING ".count).trimmingCharacters(in: .whitespaces)) {
                        finish(.success(port))
                        return
                    }
                }
            }.start()
        }
        return TestServer(port: port, token: token, host: host, process: process, secure: tls != nil)
    }

    private init(port: Int, token: String, host: String, process: Process, secure: Bool) {
        self.secure = secure
        self.port = port
        self.token = token
        self.host = host
        self.process = process
    }

    private func call(_ method: String, _ path: String, _ body: JSONValue? = nil) async throws -> JSONValue {
        var request = HTTPRequest(method: method, url: url + path, headers: [("Content-Type", "application/json")], body: body?.data)
        request.verifyPeer = !secure
        let response = try await HTTPClient().send(request)
        return try JSONValue.parse(response.body)
    }

    func setKnobs(_ knobs: JSONValue) async throws { _ = try await call("POST", "/_test/knobs", knobs) }
    func reset() async throws { _ = try await call("POST", "/_test/reset", [:]) }

    /// Every request the server received, oldest first.
    func requests() async throws -> [JSONValue] { try await call("GET", "/_test/log")["requests"]?.arrayValue ?? [] }
    /// Every request the callback sink (`/_test/callback`) received, oldest first.
    func callbacks() async throws -> [JSONValue] { try await call("GET", "/_test/log")["callbacks"]?.arrayValue ?? [] }
    /// The callback sink's URL, with `query` (such as `?ctx=abc`) after it.
    func callbackURL(_ query: String = "") -> CallbackURL {
        guard case .success(let callback) = CallbackURL.parse(self.url + "/_test/callback" + query) else { fatalError("bad query \(query)") }
        return callback
    }
    func socketLog() async throws -> [JSONValue] { try await call("GET", "/_test/log")["socket"]?.arrayValue ?? [] }
    /// The socket log once the satellite has sent `count` messages of type `type` ("ping": pings; the server
    /// waits up to 15 s): one still in flight when the test asks is waited for, not missed.
    func socketLog(until type: String, count: Int = 1) async throws -> [JSONValue] {
        try await call("GET", "/_test/log?until=\(type)&count=\(count)")["socket"]?.arrayValue ?? []
    }
    /// Drops every connection, closes the port for `restartDownMs`, and listens again (500 ms from now).
    func restart() async throws { _ = try await call("POST", "/_test/restart", [:]) }

    /// Stops the server and awaits its end without holding a thread of the pool.
    func shutdown() async {
        guard process.isRunning else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = Mutex(Optional(continuation))
            let resume: @Sendable () -> Void = { once.withLock { $0.take() }?.resume() }
            process.terminationHandler = { _ in resume() }
            if process.isRunning { process.terminate() } else { resume() }
        }
    }

    /// Asks the server to exit (SIGTERM) and returns at once: waiting for it here would hold
    /// one of the two threads async tests run on. Foundation reaps the process.
    func stop() {
        if process.isRunning { process.terminate() }
    }

    deinit { stop() }
}
