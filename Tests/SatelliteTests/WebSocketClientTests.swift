// The WebSocket client against real peers: the project's test Parlour server
// (aiohttp) for the /listen conversation and its knobs, and a raw-socket peer
// of our own for what aiohttp will not send (fragmented messages). Every test
// awaits events; the time limits are the only clocks that fail a test.
import COpenSSL
import Foundation
import TestSupport
@testable import Satellite
import SatelliteCore
import Testing

@Suite("the WebSocket client", .timeLimit(.minutes(1)))
struct WebSocketClientTests {
    static let maxBinary = 8 << 20

    /// Connects to the test server's /listen with its token in the Authorization header.
    static func connect(_ server: TestServer, mode: ListenMode = .push, token: String? = nil) throws -> WebSocketClient {
        let url = try ListenURL.build(server: server.url, client: "kitchen", room: "Kitchen", mode: mode)
        return WebSocketClient.connect(url: url, headers: ["Authorization": "Bearer \(token ?? server.token)"],
                                       maxMessage: maxBinary)
    }

    /// Connects and reads up to `ready`, checking that the handshake opened first.
    static func connectReady(_ server: TestServer, mode: ListenMode = .push) async throws -> (WebSocketClient, Events) {
        let client = try connect(server, mode: mode)
        var events = Events(client)
        let first = await events.next()
        #expect(first == .open)
        let ready = try #require(await events.nextMessage())
        #expect(ready == .ready(sampleRate: 16000, frameSamples: 1280, mode: mode))
        return (client, events)
    }

    @Test("the handshake carries the bearer header and the first message is ready")
    func ready() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let (client, _) = try await Self.connectReady(server, mode: .wake)
        client.close()
        let upgrade = try #require(try await server.requests().last { $0["path"] == "/listen" })
        #expect(upgrade["credential"] == "header")
        #expect(upgrade["tokenOk"] == true)
        #expect(upgrade["status"] == 101)
        #expect(upgrade["client"] == "kitchen")
        #expect(upgrade["room"] == "Kitchen")
        #expect(upgrade["mode"] == "wake")
        #expect(upgrade["query"]?["token"] == nil)
    }

    @Test("a push turn goes start, audio, end, and comes back thinking, speaking, reply, WAV, idle; spoke reaches the server")
    func pushRoundTrip() async throws {
        let server = try await TestServer.start(knobs: ["replyText": "The lights are off."])
        defer { server.stop() }
        let (client, events) = try await Self.connectReady(server)
        var reader = events

        #expect(client.sendText(ListenCommand.start.text))
        let tone = Self.tone(seconds: 1)
        for offset in stride(from: 0, to: tone.count, by: 2560) {
            #expect(client.sendBinary(Array(tone[offset..<min(offset + 2560, tone.count)])))
        }
        #expect(client.sendText(ListenCommand.end.text))

        #expect(await reader.nextMessage() == .state(.thinking, text: nil))
        #expect(await reader.nextMessage() == .state(.thinking, text: "turn off the kitchen lights"))
        #expect(await reader.nextMessage() == .state(.speaking, text: nil))
        #expect(await reader.nextMessage() == .reply(text: "The lights are off.", via: "local"))
        guard case .binary(let wav) = await reader.nextSkippingPongs() else {
            Issue.record("the reply was not followed by a binary message")
            return
        }
        #expect(Array(wav.prefix(4)) == Array("RIFF".utf8))
        #expect(wav.count > 44)
        #expect(await reader.nextMessage() == .state(.idle, text: nil))

        #expect(client.sendText(ListenCommand.spoke.text))
        client.close()
        #expect(await reader.nextSkippingPongs() == .closed(code: 1000, reason: "closed by this side"))

        // The server read everything before the close frame, in order.
        let received = try await server.socketLog().filter { $0["dir"] == "in" }
        let texts = received.compactMap { $0["type"]?.stringValue }
        #expect(texts == ["start", "end", "spoke"])
        let audio = received.filter { $0["kind"] == "binary" }.compactMap { $0["bytes"]?.intValue }.reduce(0, +)
        #expect(audio == tone.count)
    }

    @Test("a refused token is a failed handshake, never an open connection, and the reason has no token in it")
    func badToken() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let wrong = "wrong-\(UUID().uuidString)"
        let client = try Self.connect(server, token: wrong)
        var events = Events(client)
        guard case .failed(let reason) = await events.next() else {
            Issue.record("a refused handshake did not fail")
            return
        }
        #expect(!reason.contains(wrong))
        #expect(!reason.contains(server.token))
        #expect(await events.next() == nil)
        let upgrade = try #require(try await server.requests().last { $0["path"] == "/listen" })
        #expect(upgrade["destroyed"] == true)
    }

    @Test("nobody listening on the port is a failed connection, not an open one", .timeLimit(.minutes(1)), arguments: [
        "ws://127.0.0.1:1/listen",
        "ws://[::1]:1/listen",
    ])
    func nobodyListening(url: String) async throws {
        // How fast it fails is a figure for the benchmark, not an assertion here.
        var events = Events(WebSocketClient.connect(url: url, headers: [:], maxMessage: Self.maxBinary))
        guard case .failed = await events.next() else {
            Issue.record("connecting to a closed port did not fail")
            return
        }
        #expect(await events.next() == nil)
    }

    @Test("a URL that is not a WebSocket URL fails without connecting", arguments: [
        "http://127.0.0.1:8765/listen", "ws://", "not a url at all",
    ])
    func badURL(url: String) async {
        var events = Events(WebSocketClient.connect(url: url, headers: [:], maxMessage: Self.maxBinary))
        guard case .failed(let reason) = await events.next() else {
            Issue.record("a bad URL did not fail")
            return
        }
        #expect(reason.hasPrefix("url: "))
    }

    @Test("a server that dies without a close frame is a close with 1006")
    func serverKilled() async throws {
        let server = try await TestServer.start()
        let (_, events) = try await Self.connectReady(server)
        var reader = events
        server.stop()
        #expect(await reader.nextSkippingPongs() == .closed(code: 1006, reason: "the connection dropped without a close frame"))
        #expect(await reader.next() == nil)
    }

    @Test("a server's clean close is reported with its code")
    func serverCloses() async throws {
        let server = try await TestServer.start(knobs: ["socketCloseAfterReady": true])
        defer { server.stop() }
        let (_, events) = try await Self.connectReady(server)
        var reader = events
        guard case .closed(let code, _) = await reader.nextSkippingPongs() else {
            Issue.record("the server's close was not reported as a close")
            return
        }
        #expect(code == 1000)
    }

    @Test("a server that stops answering pings is dead after 10 s, not before")
    func noPong() async throws {
        let server = try await TestServer.start(knobs: ["socketNoPong": true])
        defer { server.stop() }
        let started = ContinuousClock.now
        let (_, events) = try await Self.connectReady(server)
        var reader = events
        guard case .dead = await reader.next() else {
            Issue.record("a peer with no pongs was not found dead")
            return
        }
        let waited = ContinuousClock.now - started
        #expect(waited >= .seconds(9))
        let pings = try await server.socketLog().filter { $0["dir"] == "in" && $0["kind"] == "ping" }
        #expect(pings.count >= 1)
    }

    @Test("a server that answers pings keeps the connection past the dead-peer time")
    func pongsKeepItAlive() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let (client, events) = try await Self.connectReady(server)
        var reader = events
        // Four keepalive pings, 3 s apart, take the connection past the dead-peer time (10 s); their pongs
        // are not events. Had the peer been found dead, `.dead` would come before the pong to this ping.
        // Asked for in two waits: the server's wait ends at 15 s, and the fourth ping is due at 12.
        _ = try await server.socketLog(until: "ping", count: 2)
        let pings = try await server.socketLog(until: "ping", count: 4).filter { $0["dir"] == "in" && $0["kind"] == "ping" }
        #expect(pings.count >= 4, "\(pings.count) pings")
        client.ping()
        #expect(await reader.next() == .pong)
        client.close()
    }

    @Test("an oversized message is reported, dropped, and the connection goes on", arguments: [
        ("socketHugeText", WebSocketMessageKind.text),
        ("socketHugeBinary", WebSocketMessageKind.binary),
    ])
    func oversized(knob: String, kind: WebSocketMessageKind) async throws {
        let server = try await TestServer.start(knobs: [knob: true])
        defer { server.stop() }
        let (client, events) = try await Self.connectReady(server)
        var reader = events
        guard case .oversized(let what, let bytes) = await reader.nextSkippingPongs() else {
            Issue.record("the huge message was not reported as oversized")
            return
        }
        #expect(what == kind)
        #expect(bytes > (kind == .text ? 4096 : Self.maxBinary))
        // Still in step: a push turn with no audio goes thinking then idle.
        client.sendText(ListenCommand.start.text)
        client.sendText(ListenCommand.end.text)
        #expect(await reader.nextMessage() == .state(.thinking, text: nil))
        #expect(await reader.nextMessage() == .state(.idle, text: nil))
    }

    @Test("close ends the events, also before the connection has opened")
    func closeEnds() async throws {
        let server = try await TestServer.start()
        defer { server.stop() }
        let (client, events) = try await Self.connectReady(server)
        var reader = events
        client.close()
        #expect(await reader.nextSkippingPongs() == .closed(code: 1000, reason: "closed by this side"))
        #expect(await reader.next() == nil)
        #expect(!client.sendText(ListenCommand.start.text))

        // Closed at once: whether or not it got to open, the events end with a close.
        let early = try Self.connect(server)
        early.close()
        var earlyEvents = Events(early)
        var last: WebSocketEvent?
        while let event = await earlyEvents.next() { last = event }
        guard case .closed = last else {
            Issue.record("an early close ended with \(String(describing: last))")
            return
        }
    }

    @Test("fragmented messages are put back together, and oversized ones dropped as they come, within bounds")
    func fragments() async throws {
        let peer = try await RawPeer.start()
        defer { peer.stop() }
        var events = Events(WebSocketClient.connect(url: "ws://127.0.0.1:\(peer.port)/", headers: [:], maxMessage: 16 << 10))
        #expect(await events.next() == .open)
        #expect(await events.next() == .text("hello, world"))
        #expect(await events.next() == .binary(Array((0..<12000).map { UInt8($0 % 251) })))
        #expect(await events.next() == .oversized(.text, bytes: 6000))
        #expect(await events.next() == .oversized(.binary, bytes: 24576))
        #expect(await events.next() == .text(String(repeating: "é", count: 2048)))
        #expect(await events.next() == .oversized(.text, bytes: 4097))
        #expect(await events.next() == .text("still in step"))
        #expect(await events.next() == .closed(code: 1000, reason: "bye"))
        #expect(await events.next() == nil)
    }

    @Test("a ping from the server is answered with its payload, and a frame no server may send closes with 1002")
    func pingAndBrokenFrame() async throws {
        let peer = try await RawPeer.start(mode: "ping")
        defer { peer.stop() }
        var events = Events(WebSocketClient.connect(url: "ws://127.0.0.1:\(peer.port)/", headers: [:], maxMessage: 16 << 10))
        #expect(await events.next() == .open)
        #expect(await events.next() == .text("answered 10 with abc"))
        #expect(await events.next() == .closed(code: 1002, reason: "the server sent a masked frame"))
        #expect(await events.next() == nil)
    }

    @Test("a flood of pings is answered with a few pongs, not one each")
    func pingFlood() async throws {
        let peer = try await RawPeer.start(mode: "flood")
        defer { peer.stop() }
        var events = Events(WebSocketClient.connect(url: "ws://127.0.0.1:\(peer.port)/", headers: [:], maxMessage: 16 << 10))
        #expect(await events.next() == .open)
        #expect(await events.next() == .text("sent"))
        guard case .text(let said) = await events.next(), said.hasPrefix("pongs "), let pongs = Int(said.dropFirst(6)) else {
            Issue.record("the peer did not say how many pongs came back")
            return
        }
        // One a wake-up at most: 20,000 without the bound (and 120 KB queued).
        #expect(pongs >= 1 && pongs < 100, "\(pongs) pongs for 20,000 pings")
        #expect(await events.next() == .closed(code: 1000, reason: ""))
    }

    @Test("a server faster than the consumer is read no further than maxUntakenBytes and one message ahead, and nothing is lost",
          arguments: [("burst", 40000, 0), ("bigburst", 40, 512 << 10)])
    func backPressure(mode: String, messages: Int, size: Int) async throws {
        let peer = try await RawPeer.start(mode: mode)
        defer { peer.stop() }
        let client = WebSocketClient.connect(url: "ws://127.0.0.1:\(peer.port)/", headers: [:], maxMessage: 1 << 20)
        var events = Events(client)
        #expect(await events.next() == .open)
        // The consumer falls behind on purpose: this pause is what is tested, not a wait for something.
        try await Task.sleep(for: .seconds(1))
        var taken = 0
        while taken < messages, case .binary(let data)? = await events.next() {
            #expect(data.count == size && data.allSatisfy { $0 == UInt8(taken % 256) })
            taken += 1
        }
        #expect(taken == messages)
        #expect(await events.next() == .text("last"))
        #expect(await events.next() == .closed(code: 1000, reason: ""))
        // Without a bound one 64 KiB read alone would have held 32,768 empty messages; counted in
        // messages rather than bytes, 40 of 512 KiB (20 MiB) would have been held at once.
        #expect(client.untakenPeak <= WebSocketClient.maxUntakenBytes + size + 64, "\(client.untakenPeak) bytes untaken at once")
    }

    @Test("on the server's close the client answers with its code and waits for the server to end TCP (RFC 6455, 7.1.1)")
    func serverEndsTCPFirst() async throws {
        let peer = try await RawPeer.start(mode: "closefirst")
        defer { peer.stop() }
        var events = Events(WebSocketClient.connect(url: "ws://127.0.0.1:\(peer.port)/", headers: [:], maxMessage: 16 << 10))
        #expect(await events.next() == .open)
        #expect(await events.next() == .text("hello"))
        #expect(await events.next() == .closed(code: 4001, reason: "going"))
        #expect(await events.next() == nil)
        // The side that ends TCP first holds TIME_WAIT; the peer only ends it once the client's close came back.
        #expect(await TimeWait.holder(port: peer.port) == .server)
        #expect(await peer.said() == "close 4001")
    }

    @Test("our close goes with 1000 after what was queued, and waits for the server's close and its end of TCP")
    func ourCloseAnswered() async throws {
        let peer = try await RawPeer.start(mode: "answerclose")
        defer { peer.stop() }
        let client = WebSocketClient.connect(url: "ws://127.0.0.1:\(peer.port)/", headers: [:], maxMessage: 16 << 10)
        var events = Events(client)
        #expect(await events.next() == .open)
        #expect(await events.next() == .text("hello"))
        client.close()
        #expect(await events.next() == .closed(code: 1000, reason: "closed by this side"))
        #expect(await events.next() == nil)
        #expect(await peer.said() == "close 1000")
        #expect(await TimeWait.holder(port: peer.port) == .server)
    }

    @Test("what no server may send closes the connection: a close code reserved for this side, text that is not UTF-8; an unasked-for extension fails the handshake",
          arguments: [
              ("badclose", WebSocketEvent.closed(code: 1002, reason: "the server sent the close code 1006")),
              ("badtext", WebSocketEvent.closed(code: 1007, reason: "the server sent text that is not UTF-8")),
              ("extension", WebSocketEvent.failed(reason: "handshake: the server chose an extension or subprotocol this client did not ask for")),
          ])
    func refusedFromPeer(mode: String, last: WebSocketEvent) async throws {
        let peer = try await RawPeer.start(mode: mode)
        defer { peer.stop() }
        var events = Events(WebSocketClient.connect(url: "ws://127.0.0.1:\(peer.port)/", headers: [:], maxMessage: 16 << 10))
        if mode != "extension" { #expect(await events.next() == .open) }
        #expect(await events.next() == last)
        #expect(await events.next() == nil)
    }

    @Test("a header value with a line break in it is refused before connecting, and the error does not hold the value")
    func headerInjection() async throws {
        for value in ["Bearer x\r\nX-Evil: 1", "Bearer x\nX-Evil: 1", "Bearer x\u{7f}"] {
            var events = Events(WebSocketClient.connect(url: "ws://127.0.0.1:1/", headers: ["Authorization": value], maxMessage: 1024))
            guard case .failed(let reason) = await events.next() else {
                Issue.record("a header holding \(value.debugDescription) was not refused")
                continue
            }
            #expect(reason == "headers: the Authorization header holds a control character")
        }
        var events = Events(WebSocketClient.connect(url: "ws://127.0.0.1:1/", headers: ["Bad Name": "x"], maxMessage: 1024))
        #expect(await events.next() == .failed(reason: "headers: a header's name is not a token"))
    }

    @Test("wss with a pinned key: the key shown is all that counts, and another is refused before the request")
    func pinnedKey() async throws {
        let dir = try Package.temporaryDirectory("wss-pinned")
        defer { try? FileManager.default.removeItem(at: dir) }
        let cert = dir.appendingPathComponent("cert.pem").path, key = dir.appendingPathComponent("key.pem").path
        // A certificate for another name, signed by nobody: only the pin vouches for it.
        try await Subprocess.check("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                                                        "-subj", "/CN=elsewhere.invalid", "-keyout", key, "-out", cert])
        var digest = [UInt8](repeating: 0, count: 32)
        #expect(tls_pem_spki_sha256(try String(contentsOfFile: cert, encoding: .utf8), &digest) == 0)
        let shown = ServerKey.text(digest: digest)
        let peer = try await RawPeer.start(certificate: cert, key: key)
        defer { peer.stop() }
        let url = "wss://127.0.0.1:\(peer.port)/"

        var pinned = Events(WebSocketClient.connect(url: url, headers: [:], maxMessage: Self.maxBinary, key: shown))
        #expect(await pinned.next() == .open)
        #expect(await pinned.next() == .text("hello, world"))

        let other = "sha256/" + String(repeating: "A", count: 43) + "="
        var refused = Events(WebSocketClient.connect(url: url, headers: ["Authorization": "Bearer secret"], maxMessage: Self.maxBinary, key: other))
        guard case .refused(let error) = await refused.next() else {
            Issue.record("a server showing another key than the pinned one was not refused")
            return
        }
        #expect(error.code == .serverKeyChanged)
        #expect(error.message.contains(shown))
    }

    @Test("wss checks the server's certificate against the system CA store, and the host's name in its subjectAltName only, a wildcard standing for a whole label")
    func tls() async throws {
        let dir = try Package.temporaryDirectory("wss")
        defer { try? FileManager.default.removeItem(at: dir) }
        let cert = dir.appendingPathComponent("cert.pem").path, key = dir.appendingPathComponent("key.pem").path
        try await Subprocess.check("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                                                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                                                        "-keyout", key, "-out", cert])
        let peer = try await RawPeer.start(certificate: cert, key: key)
        defer { peer.stop() }
        let url = "wss://127.0.0.1:\(peer.port)/"

        // A certificate no CA in the store signed: refused.
        var refused = Events(WebSocketClient.connect(url: url, headers: [:], maxMessage: Self.maxBinary))
        guard case .failed = await refused.next() else {
            Issue.record("an untrusted certificate was accepted")
            return
        }

        // The test server's certificates for names, each its own authority; with the first, the store.
        let names: [(subjectAltName: String?, accepted: Bool)] = [
            ("DNS:foo.parlour.test", true),
            ("DNS:*.parlour.test", true),
            // OpenSSL's defaults accept both of these.
            ("DNS:f*.parlour.test", false),
            (nil, false),
        ]
        let certificates = try names.map { try TestCertificate.make(name: "foo.parlour.test", subjectAltName: $0.subjectAltName) }
        let store = dir.appendingPathComponent("store.pem")
        try ([cert] + certificates.map(\.certificate)).map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
            .write(to: store, atomically: true, encoding: .utf8)

        try await withCertificateStore(store.path) {
            var trusted = Events(WebSocketClient.connect(url: url, headers: [:], maxMessage: Self.maxBinary))
            #expect(await trusted.next() == .open)
            #expect(await trusted.next() == .text("hello, world"))

            for (index, certificate) in certificates.enumerated() {
                let server = try await TestServer.start(tls: certificate)
                defer { server.stop() }
                let url = try ListenURL.build(server: "https://foo.parlour.test:\(server.port)", client: "kitchen", room: "Kitchen", mode: .push)
                var events = Events(WebSocketClient.connect(url: url, headers: ["Authorization": "Bearer \(server.token)"],
                                                            maxMessage: Self.maxBinary, addresses: [server.host]))
                let first = await events.next()
                if names[index].accepted {
                    #expect(first == .open, "\(names[index].subjectAltName ?? "no subjectAltName")")
                } else {
                    #expect(first == .failed(reason: "tls: the server's certificate is not trusted: hostname mismatch"),
                            "\(names[index].subjectAltName ?? "no subjectAltName")")
                    #expect(try await server.requests().isEmpty, "the request went to a server whose certificate names another host")
                }
            }
        }
    }

    // MARK: Helpers

    /// One second of a loud 440 Hz tone, 16 kHz mono S16_LE.
    static func tone(seconds: Double) -> [UInt8] {
        let count = Int(16000 * seconds)
        var data: [UInt8] = []
        data.reserveCapacity(count * 2)
        for n in 0..<count {
            let sample = Int16(16000 * sin(2 * Double.pi * 440 * Double(n) / 16000))
            withUnsafeBytes(of: sample.littleEndian) { data.append(contentsOf: $0) }
        }
        return data
    }
}

/// Who holds a connection's TIME_WAIT once it is gone: the side that ended TCP first (RFC 9293, 3.6).
enum TimeWait: Equatable {
    case server, client

    /// Waits for the TIME_WAIT of the one IPv4 loopback connection to or from `port`, in /proc/net/tcp:
    /// the kernel reports no event for it, so the table is read again every 10 ms until it shows.
    static func holder(port: Int) async -> TimeWait? {
        let hex = String(format: ":%04X", port)
        while !Task.isCancelled {
            let table = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)) ?? ""
            for row in table.split(separator: "\n").dropFirst() {
                let fields = row.split(separator: " ")
                guard fields.count > 3, fields[3] == "06" else { continue }
                if fields[1].hasSuffix(hex) { return .server }
                if fields[2].hasSuffix(hex) { return .client }
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }
}

/// Reads a client's events in order.
struct Events {
    private var iterator: WebSocketEvents.AsyncIterator

    init(_ client: WebSocketClient) { iterator = client.events.makeAsyncIterator() }

    mutating func next() async -> WebSocketEvent? { await iterator.next() }

    /// The next event that is not a keepalive pong.
    mutating func nextSkippingPongs() async -> WebSocketEvent? {
        while let event = await iterator.next() {
            if event != .pong { return event }
        }
        return nil
    }

    /// The next text event, decoded; nil (and a recorded issue) if something else comes.
    mutating func nextMessage() async -> ListenMessage? {
        let event = await nextSkippingPongs()
        guard case .text(let text) = event else {
            Issue.record("expected a text message, got \(String(describing: event))")
            return nil
        }
        do {
            return try ListenMessage.decode(text)
        } catch {
            Issue.record("the server sent a message that does not decode: \(error)")
            return nil
        }
    }
}

/// A WebSocket peer written on raw sockets, for what aiohttp will not send: fragmented
/// messages, or a ping of its own and then a frame no server may send. It answers one
/// handshake, sends a fixed sequence of frames, and closes.
final class RawPeer: Sendable {
    let port: Int
    private let process: Process

    static let script = #"""
import asyncio, base64, hashlib, struct, sys

def frame(opcode, payload, fin=True):
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    if n < 126: head += bytes([n])
    elif n < 65536: head += bytes([126]) + struct.pack("!H", n)
    else: head += bytes([127]) + struct.pack("!Q", n)
    return head + payload

def fragments(opcode, payload, sizes):
    out, at = b"", 0
    for i, size in enumerate(sizes):
        out += frame(opcode if i == 0 else 0, payload[at:at + size], fin=i == len(sizes) - 1)
        at += size
    return out

async def read_frame(reader):
    head = await reader.readexactly(2)
    n = head[1] & 0x7f
    if n == 126: n = struct.unpack("!H", await reader.readexactly(2))[0]
    elif n == 127: n = struct.unpack("!Q", await reader.readexactly(8))[0]
    key = await reader.readexactly(4) if head[1] & 0x80 else b"\0\0\0\0"
    payload = await reader.readexactly(n)
    return head[0] & 0x0f, bytes(b ^ key[i % 4] for i, b in enumerate(payload))

async def until_closed(reader):
    # Until the client's close frame (or its hang-up): then the server ends TCP first (RFC 6455, 7.1.1).
    # One that ended it sooner would answer the client's next ping with a reset, and a reset throws
    # away what the client had not read yet.
    try:
        while True:
            opcode, data = await read_frame(reader)
            if opcode == 8:
                return data
    except (asyncio.IncompleteReadError, ConnectionError):
        return None

async def serve(reader, writer):
    request = await reader.readuntil(b"\r\n\r\n")
    key = [l.split(b":", 1)[1].strip() for l in request.split(b"\r\n") if l.lower().startswith(b"sec-websocket-key:")][0]
    accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    extra = b"Sec-WebSocket-Extensions: permessage-deflate\r\n" if sys.argv[1] == "extension" else b""
    writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" + extra
                 + b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
    if sys.argv[1] in ("badclose", "badtext"):
        writer.write(frame(8, struct.pack("!H", 1006)) if sys.argv[1] == "badclose" else frame(1, b"\xff\xfe"))
        await writer.drain()
        await until_closed(reader)
        writer.close()
        return
    if sys.argv[1] == "closefirst":
        writer.write(frame(1, b"hello") + frame(8, struct.pack("!H", 4001) + b"go\ning"))
        await writer.drain()
        data = await until_closed(reader)
        print("close %d" % struct.unpack("!H", data[:2])[0] if data and len(data) >= 2 else "close none", flush=True)
        writer.close()
        return
    if sys.argv[1] == "answerclose":
        writer.write(frame(1, b"hello"))
        await writer.drain()
        data = await until_closed(reader)
        print("close %d" % struct.unpack("!H", data[:2])[0] if data and len(data) >= 2 else "close none", flush=True)
        writer.write(frame(8, data or b""))
        await writer.drain()
        writer.close()
        return
    if sys.argv[1] == "bigburst":
        writer.write(b"".join(frame(2, bytes([i % 256]) * (512 << 10)) for i in range(40)) + frame(1, b"last")
                     + frame(8, struct.pack("!H", 1000)))
        await writer.drain()
        await until_closed(reader)
        writer.close()
        return
    if sys.argv[1] == "burst":
        writer.write(frame(2, b"") * 40000 + frame(1, b"last") + frame(8, struct.pack("!H", 1000)))
        await writer.drain()
        await until_closed(reader)
        writer.close()
        return
    if sys.argv[1] == "flood":
        # 20,000 pings at once, never read until they are all sent: how many pongs come back?
        writer.write(frame(9, b"") * 20000 + frame(1, b"sent"))
        await writer.drain()
        pongs = 0
        try:
            while True:
                # The first answer may wait on a loaded machine; once they come, a second of quiet ends them.
                opcode, _ = await asyncio.wait_for(read_frame(reader), 1 if pongs else 30)
                pongs += opcode == 10
        except (asyncio.TimeoutError, asyncio.IncompleteReadError):
            pass
        writer.write(frame(1, b"pongs %d" % pongs) + frame(8, struct.pack("!H", 1000)))
        await writer.drain()
        await until_closed(reader)
        writer.close()
        return
    if sys.argv[1] == "ping":
        writer.write(frame(9, b"abc"))
        opcode, data = await read_frame(reader)
        writer.write(frame(1, b"answered %d with %s" % (opcode, data)))
        writer.write(bytes([0x81, 0x82, 0, 0, 0, 0]) + b"hi")
        await writer.drain()
        await until_closed(reader)
        writer.close()
        return
    writer.write(fragments(1, b"hello, world", [3, 4, 5]))
    writer.write(fragments(2, bytes(i % 251 for i in range(12000)), [5000, 5000, 2000]))
    writer.write(fragments(1, b"x" * 6000, [2000, 2000, 2000]))
    writer.write(fragments(2, b"\0" * 24576, [8192, 8192, 8192]))
    writer.write(frame(1, "é".encode() * 2048))
    writer.write(fragments(1, b"y" * 4097, [4096, 1]))
    writer.write(frame(1, b"still in step"))
    writer.write(frame(8, struct.pack("!H", 1000) + b"bye"))
    await writer.drain()
    await until_closed(reader)
    writer.close()

async def main():
    tls = None
    if len(sys.argv) > 3:
        import ssl
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(sys.argv[2], sys.argv[3])
    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=tls)
    print("LISTENING", server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()

asyncio.run(main())
"""#

    /// What the peer does after the handshake: `fragments` (the default) sends fragmented and oversized
    /// messages; `ping` pings, says what came back, then sends a masked frame; `flood` sends 20,000 pings
    /// at once and says how many pongs came back; `badclose` closes with 1006, which no peer may send;
    /// `badtext` sends text that is not UTF-8; `extension` answers with an extension nobody asked for;
    /// `burst` sends 40,000 empty messages at once, `bigburst` 40 of 512 KiB (the nth all n % 256); `closefirst` closes with 4001
    /// and says which code came back (`said`); `answerclose` waits for the client's close, says its code and answers it. After its close, or the client's, it ends TCP once the client's close came.
    static func start(certificate: String? = nil, key: String? = nil, mode: String = "fragments") async throws -> RawPeer {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Package.python)
        process.arguments = ["-c", script, mode] + [certificate, key].compactMap { $0 }
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        TestChildren.tie(process)
        let handle = out.fileHandleForReading
        let line = try await Self.line(from: handle)
        guard line.hasPrefix("LISTENING "), let port = Int(line.dropFirst(10)) else {
            throw TestFailure("the raw WebSocket peer did not start: \(line)")
        }
        return RawPeer(port: port, process: process, output: handle)
    }

    private let output: FileHandle

    private init(port: Int, process: Process, output: FileHandle) {
        self.port = port
        self.process = process
        self.output = output
    }

    /// The next line the peer printed after it started listening.
    func said() async -> String? { try? await Self.line(from: output) }

    /// Reads one line, a byte at a time (what follows it stays in the pipe), on a thread of its own.
    private static func line(from handle: FileHandle) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                var line: [UInt8] = []
                var byte: UInt8 = 0
                while read(handle.fileDescriptor, &byte, 1) == 1 && byte != 10 { line.append(byte) }
                continuation.resume(returning: String(decoding: line, as: UTF8.self))
            }.start()
        }
    }

    /// SIGKILL: a child spawned from a pool thread inherits its blocked SIGTERM. No wait:
    /// waitUntilExit would hold one of the two threads async tests run on.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
