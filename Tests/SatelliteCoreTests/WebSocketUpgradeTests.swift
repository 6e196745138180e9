// The WebSocket handshake, the client's side (WebSocketUpgrade): the request
// it writes, and the server's answer judged as its bytes come, each rule a
// row, every row again as the answer grows a byte at a time.
import Testing
@testable import SatelliteCore

@Suite("the WebSocket upgrade")
struct WebSocketUpgradeTests {
    /// The RFC's example nonce ("the sample nonce"), whose accept the RFC gives.
    static let nonce = Array("the sample nonce".utf8)
    static let accept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

    static func upgrade() throws -> WebSocketUpgrade {
        try WebSocketUpgrade(pathAndQuery: "/listen?client=k", host: "den.local:8765",
                             headers: [("Authorization", "Bearer abc")], nonce: nonce)
    }

    static func answer(_ lines: [String], status: String = "HTTP/1.1 101 Switching Protocols") -> [UInt8] {
        Array(([status] + lines).map { $0 + "\r\n" }.joined().utf8) + Array("\r\n".utf8)
    }

    static let good = ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: \(accept)"]

    @Test("the request: the key from the nonce, the headers after the handshake's own")
    func request() throws {
        let upgrade = try Self.upgrade()
        #expect(String(decoding: upgrade.request, as: UTF8.self) == "GET /listen?client=k HTTP/1.1\r\nHost: den.local:8765\r\n"
            + "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer abc\r\n\r\n")
        #expect(upgrade.accept == Self.accept)
    }

    @Test("a header that would break the request is refused, and the error holds no value", arguments: [
        ("Authorization", "Bearer x\r\nX-Evil: 1", "the Authorization header holds a control character"),
        ("Authorization", "Bearer x\n", "the Authorization header holds a control character"),
        ("Authorization", "Bearer \u{7f}", "the Authorization header holds a control character"),
        ("Bad Name", "x", "a header's name is not a token"),
        ("", "x", "a header's name is not a token"),
    ])
    func badHeader(name: String, value: String, reason: String) {
        #expect(throws: WebSocketUpgrade.BadHeader.self) {
            try WebSocketUpgrade(pathAndQuery: "/", host: "h", headers: [(name, value)], nonce: Self.nonce)
        }
        do {
            _ = try WebSocketUpgrade(pathAndQuery: "/", host: "h", headers: [(name, value)], nonce: Self.nonce)
        } catch {
            #expect(error.reason == reason)
        }
    }

    static let notUpgrade = WebSocketUpgrade.Answer.invalid("the server's answer is not a WebSocket upgrade")

    static let rows: [(String, [UInt8], WebSocketUpgrade.Answer)] = [
        ("the RFC's answer", answer(good), .accepted(headBytes: answer(good).count)),
        ("tokens in any case, Connection a list", answer(["upgrade: WebSocket", "CONNECTION: keep-alive, Upgrade",
                                                           "sec-websocket-accept:\t\(accept) "]),
         .accepted(headBytes: answer(["upgrade: WebSocket", "CONNECTION: keep-alive, Upgrade", "sec-websocket-accept:\t\(accept) "]).count)),
        ("Connection over two lines", answer(["Upgrade: websocket", "Connection: keep-alive", "Connection: upgrade",
                                              "Sec-WebSocket-Accept: \(accept)"]),
         .accepted(headBytes: answer(["Upgrade: websocket", "Connection: keep-alive", "Connection: upgrade",
                                      "Sec-WebSocket-Accept: \(accept)"]).count)),
        ("frames right behind the head", answer(good) + [0x81, 0x00], .accepted(headBytes: answer(good).count)),
        ("an Upgrade to more than websocket", answer(["Upgrade: websocket, h2c", "Connection: Upgrade", "Sec-WebSocket-Accept: \(accept)"]), notUpgrade),
        ("no Upgrade", answer(["Connection: Upgrade", "Sec-WebSocket-Accept: \(accept)"]), notUpgrade),
        ("no Connection: upgrade", answer(["Upgrade: websocket", "Connection: keep-alive", "Sec-WebSocket-Accept: \(accept)"]), notUpgrade),
        ("Connection: upgraded is not upgrade", answer(["Upgrade: websocket", "Connection: upgraded", "Sec-WebSocket-Accept: \(accept)"]), notUpgrade),
        ("another accept", answer(["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: AAAA"]), notUpgrade),
        ("the accept in another case", answer(["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: \(accept.lowercased())"]), notUpgrade),
        ("two accepts", answer(good + ["Sec-WebSocket-Accept: \(accept)"]), notUpgrade),
        ("no accept", answer(["Upgrade: websocket", "Connection: Upgrade"]), notUpgrade),
        ("101 over HTTP/1.0", answer(good, status: "HTTP/1.0 101 Switching Protocols"), notUpgrade),
        ("an extension nobody asked for", answer(good + ["Sec-WebSocket-Extensions: permessage-deflate"]),
         .invalid("the server chose an extension or subprotocol this client did not ask for")),
        ("a subprotocol nobody asked for", answer(good + ["Sec-WebSocket-Protocol: chat"]),
         .invalid("the server chose an extension or subprotocol this client did not ask for")),
        ("a refusal", answer([], status: "HTTP/1.1 401 Unauthorized"), .status(401)),
        ("a refusal over HTTP/1.0, with no reason", answer([], status: "HTTP/1.0 403"), .status(403)),
        ("a redirect", answer(["Location: http://elsewhere/listen"], status: "HTTP/1.1 307 Temporary Redirect"),
         .redirect(status: 307, location: "http://elsewhere/listen")),
        ("a redirect with nowhere to go", answer([], status: "HTTP/1.1 301 Moved"), .redirect(status: 301, location: nil)),
        ("not HTTP", answer(good, status: "SSH-2.0-OpenSSH"), .invalid("the server's answer is not HTTP")),
        ("HTTP/2", answer(good, status: "HTTP/2 101"), .invalid("the server's answer is not HTTP")),
        ("a status of two digits", answer(good, status: "HTTP/1.1 99 Odd"), .invalid("the server's answer is not HTTP")),
        ("a status with a sign", answer(good, status: "HTTP/1.1 +01 Odd"), .invalid("the server's answer is not HTTP")),
        ("a head ended by bare LFs", Array("HTTP/1.1 101 Switching Protocols\nUpgrade: websocket\n\n".utf8),
         .invalid("a line of the server's answer does not end in CRLF")),
        ("one bare LF", Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\nConnection: Upgrade\r\n\r\n".utf8),
         .invalid("a line of the server's answer does not end in CRLF")),
        ("a bare CR", Array("HTTP/1.1 101 Switching Protocols\rUpgrade: websocket\r\n\r\n".utf8),
         .invalid("a line of the server's answer does not end in CRLF")),
        ("a NUL in a header", answer(good + ["X-Odd: a\u{0}b"]), .invalid("the server's answer holds a control character")),
        ("a line that is not a header", answer(good + ["no colon here"]),
         .invalid("the server's answer has a header line that is not a name and a value")),
        ("a folded header", answer(good + [" folded"]),
         .invalid("the server's answer has a header line that is not a name and a value")),
        ("a space before the colon", answer(good + ["X-Odd : 1"]),
         .invalid("the server's answer has a header line that is not a name and a value")),
        ("a head of exactly the bound", answer(good + ["X-Pad: " + String(repeating: "p", count: 16384 - answer(good).count - 9)]),
         .accepted(headBytes: 16384)),
        ("a head one byte over the bound", answer(good + ["X-Pad: " + String(repeating: "p", count: 16384 - answer(good).count - 8)]),
         .invalid("the server's answer has no end within 16384 bytes")),
    ]

    @Test("each rule, with the answer whole", arguments: rows)
    func whole(name: String, answer: [UInt8], expected: WebSocketUpgrade.Answer) throws {
        var upgrade = try Self.upgrade()
        #expect(upgrade.read(answer) == expected, "\(name)")
    }

    @Test("each rule, with the answer growing a byte at a time: incomplete until its head is in, then the same")
    func growing() throws {
        for (name, answer, expected) in Self.rows {
            var upgrade = try Self.upgrade()
            var verdict = WebSocketUpgrade.Answer.incomplete
            var count = 0
            while verdict == .incomplete && count < answer.count {
                count += 1
                verdict = upgrade.read(Array(answer[..<count]))
            }
            #expect(verdict == expected, "\(name), after \(count) bytes")
        }
    }

    @Test("a head that never ends is refused once it passes the bound")
    func endless() throws {
        var upgrade = try Self.upgrade()
        let head = Array("HTTP/1.1 101 OK\r\nX-Pad: ".utf8) + [UInt8](repeating: 112, count: 16384)
        #expect(upgrade.read(Array(head[..<16384])) == .incomplete)
        #expect(upgrade.read(head) == .invalid("the server's answer has no end within 16384 bytes"))
    }
}
