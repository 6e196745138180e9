// A small real HTTP peer for the HTTP client's tests: Python's http.server in a
// child process, with one mode per misbehaviour a satellite must survive. The
// script lives in this file because SwiftPM warns about a stray .py in a target.
// Easy to get wrong: wait for LISTENING before the first request; the child
// inherits a signal mask that blocks SIGTERM (the script clears it) and must not
// outlive the test run (it leaves when its stdin closes).
import Foundation
import TestSupport
import Synchronization

/// One running peer. The first path segment picks the mode: `/<mode>/ask`.
final class MiniServer: Sendable {
    let port: Int
    /// A port where nothing listens.
    let nobodyPort: Int
    /// A port whose listen queue is full, so a connection attempt hangs.
    let stallPort: Int
    /// The peer's output lines after LISTENING: `REQUEST <method> <path>` for each request.
    let output: AsyncStream<String>
    private let process: Mutex<Process>
    private let lifeline: Pipe

    /// The base URL for a mode, such as `http://127.0.0.1:PORT/ok`.
    func url(_ mode: String) -> String { "http://127.0.0.1:\(port)/\(mode)" }

    /// Waits for the peer to report that a request arrived.
    func requestArrived() async {
        _ = await nextRequest()
    }

    /// The next request the peer reports, as `<method> <path>`.
    func nextRequest() async -> String? {
        for await line in output where line.hasPrefix("REQUEST ") { return String(line.dropFirst("REQUEST ".count)) }
        return nil
    }

    /// Runs `body` against a fresh peer and stops the peer afterwards, whatever happens.
    /// With `tls`, the peer speaks https with that certificate and key (PEM files).
    static func with(tls: (certificate: String, key: String)? = nil, _ body: (MiniServer) async throws -> Void) async throws {
        let server = try await start(tls: tls)
        defer { server.stop() }
        try await body(server)
    }

    static func start(tls: (certificate: String, key: String)? = nil) async throws -> MiniServer {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-u", "-c", script] + (tls.map { [$0.certificate, $0.key] } ?? [])
        let pipe = Pipe()
        process.standardOutput = pipe
        // The peer exits when this pipe closes, so it cannot outlive a crashed test run.
        let lifeline = Pipe()
        process.standardInput = lifeline
        try process.run()
        TestChildren.tie(process)

        let (lines, sink) = AsyncStream.makeStream(of: String.self)
        // A thread of its own: reading a pipe blocks.
        let reader = pipe.fileHandleForReading
        Thread {
            var pending = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    sink.yield(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    pending.removeSubrange(pending.startIndex...newline)
                }
            }
            sink.finish()
        }.start()

        var ports: [String: Int] = [:]
        for await line in lines {
            let words = line.split(separator: " ")
            if words.count == 2, let port = Int(words[1]) { ports[String(words[0])] = port }
            if words.first == "LISTENING" { break }
        }
        guard let port = ports["LISTENING"], let nobody = ports["NOBODY"], let stall = ports["STALL"] else {
            process.terminate()
            throw PeerDidNotStart()
        }
        return MiniServer(port: port, nobodyPort: nobody, stallPort: stall, output: lines, process: process, lifeline: lifeline)
    }

    private init(port: Int, nobodyPort: Int, stallPort: Int, output: AsyncStream<String>, process: Process, lifeline: Pipe) {
        self.port = port
        self.nobodyPort = nobodyPort
        self.stallPort = stallPort
        self.output = output
        self.process = Mutex(process)
        self.lifeline = lifeline
    }

    /// Ends the peer without waiting for it: waitUntilExit would block a thread of the
    /// small cooperative pool, and Foundation reaps the child on its own thread.
    func stop() {
        process.withLock { $0.terminate() }
        try? lifeline.fileHandleForWriting.close()
    }

    struct PeerDidNotStart: Error {}

    /// Answers by mode; `ok` answers each route as Parlour does and echoes what it
    /// saw (method, route, query, Authorization, Content-Type, Expect, body, the client's port) in
    /// /ask's `reply` and /voice's `heard`, so a test can check what was sent.
    static let script = #"""
import base64, json, os, signal, socket, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Descriptors leaked from the test process (another peer's lifeline among them) would keep pipes open.
os.closerange(3, 4096)

# The child inherits the spawning thread's signal mask, which blocks SIGTERM.
signal.pthread_sigmask(signal.SIG_SETMASK, [])

# When the test process goes away, however it goes, stdin closes: leave with it.
def watch_parent():
    sys.stdin.buffer.read()
    os._exit(0)
threading.Thread(target=watch_parent, daemon=True).start()

WAV = b"RIFF\x24\x00\x00\x00WAVEfmt fake reply audio"

# A port nothing listens on, kept bound (never listening, so a connection is refused) for as long
# as this peer lives: a port closed at once was taken by another test's server in a parallel pass,
# and the test that expected nothing there got an answer (server_refused, not server_unreachable).
nobody = socket.socket()
nobody.bind(("127.0.0.1", 0))
NOBODY = nobody.getsockname()[1]

# A listener that never accepts, with its one-place queue filled: further SYNs are dropped.
stall = socket.socket()
stall.bind(("127.0.0.1", 0))
stall.listen(0)
fillers = []
for _ in range(3):
    c = socket.socket()
    c.setblocking(False)
    c.connect_ex(stall.getsockname())
    fillers.append(c)

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.answer()

    def do_POST(self):
        self.answer()

    def send(self, status, body, content_type="application/json", headers=()):
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def answer(self):
        path, _, query = self.path.partition("?")
        _, mode, route = path.split("/", 2) if path.count("/") >= 2 else ("", path.strip("/"), "")
        route = "/" + route
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        print("REQUEST", self.command, path, flush=True)
        seen = json.dumps({
            "method": self.command, "route": route, "query": query,
            "authorization": self.headers.get("Authorization"),
            "contentType": self.headers.get("Content-Type"),
            "expect": self.headers.get("Expect"),
            "body": base64.b64encode(body).decode(),
            "peerPort": self.client_address[1],
            "host": self.headers.get("Host"),
            "injected": self.headers.get("X-Injected"),
            "serverPort": self.server.server_address[1],
        })
        if mode.startswith("slow"):
            time.sleep(30)
            mode = "ok"
        if mode == "ok":
            if route == "/health":
                self.send(200, {"ok": True, "tools": 3, "cloud": False, "running": 1, "waiting": 0})
            elif route == "/v1/models":
                self.send(200, {"object": "list", "data": [{"id": "parlour", "object": "model", "created": 0, "owned_by": "parlour"}]})
            elif route == "/ask":
                self.send(200, {"reply": seen, "via": "local"})
            elif route == "/voice":
                self.send(200, {"heard": seen, "reply": "It is four.", "via": "cloud", "audio": base64.b64encode(WAV).decode()})
            else:
                self.send(404, {"error": "no such route"})
        elif mode == "refuse":
            self.send(401, {"error": "a bearer token is required"})
        elif mode == "fail":
            self.send(500, {"error": "the kitchen is on fire"})
        elif mode == "plain":
            self.send(502, b"Bad Gateway", "text/plain")
        elif mode == "garbage":
            self.send(200, b"this is not json", "text/plain")
        elif mode == "wrongtypes":
            self.send(200, {"heard": "", "reply": 5, "via": "local", "audio": None})
        elif mode == "badaudio":
            self.send(200, {"heard": "", "reply": "x", "via": "local", "audio": "!!! not base64 !!!"})
        elif mode == "redirect":
            self.send(302, {"error": "moved"}, headers=[("Location", "http://127.0.0.1:%d%s" % (NOBODY, self.path))])
        elif mode == "cut":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"reply": "It is')
            self.wfile.flush()
            self.close_connection = True
        elif mode == "big":
            self.send(200, {"reply": "x" * 65536, "via": "local"})
        elif mode == "bigstream":
            # No Content-Length: the body ends when the connection closes.
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            for _ in range(64):
                self.wfile.write(b"x" * 1024)
            self.close_connection = True
        elif mode in ("chunked", "bigchunked"):
            # The answer in chunks of 7 bytes, one with an extension, then a trailer.
            body = json.dumps({"reply": seen, "via": "local"}).encode() if mode == "chunked" else b"x" * 65536
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for at in range(0, len(body), 7):
                piece = body[at:at + 7]
                extension = b";name=value" if at == 7 else b""
                self.wfile.write(b"%x%s\r\n%s\r\n" % (len(piece), extension, piece))
            self.wfile.write(b"0\r\nX-Trailer: done\r\n\r\n")
        elif mode == "badchunk":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"zz\r\nhello\r\n0\r\n\r\n")
            self.close_connection = True
        elif mode == "twolengths":
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 4\r\n\r\n{}{}")
            self.close_connection = True
        elif mode == "continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.send(200, {"reply": "after a continue", "via": "local"})
        elif mode == "negchunk":
            # A chunk size of -1, then a stream of bytes: must not be buffered without end.
            self.wfile.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n")
            try:
                for _ in range(256):
                    self.wfile.write(b"x" * (1 << 20))
            except Exception:
                pass
            self.close_connection = True
        elif mode == "postonce":
            # The first request on a connection is answered; the next is read whole, then the connection
            # closes unanswered, after the seconds the query gives.
            self.count = getattr(self, "count", 0) + 1
            if self.count == 1:
                self.send(200, {"reply": seen, "via": "local"})
            else:
                time.sleep(float(query or "0"))
                self.close_connection = True
        elif mode == "resetbody":
            # No length: the body runs to the close, but the connection is reset, not closed.
            import struct
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n" + b"partial" * 100)
            self.wfile.flush()
            time.sleep(0.3)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
        elif mode == "tinychunks":
            # The body in one-byte chunks, as many as the query says.
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"1\r\nx\r\n" * int(query or "1048576") + b"0\r\n\r\n")
        elif mode == "closeafter":
            # Answers as if it kept the connection, then closes it: the next request must not be lost on it.
            self.send(200, {"reply": seen, "via": "local"})
            self.wfile.flush()
            self.close_connection = True
        else:
            self.send(404, {"error": "no such mode"})

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
if len(sys.argv) == 3:
    # https with the certificate and key given.
    import ssl
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[1], sys.argv[2])
    server.socket = context.wrap_socket(server.socket, server_side=True)
print("NOBODY", NOBODY)
print("STALL", stall.getsockname()[1])
print("LISTENING", server.server_address[1], flush=True)
server.serve_forever()
"""#
}
