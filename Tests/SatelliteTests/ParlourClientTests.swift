import Foundation
import Testing
@testable import Satellite
import SatelliteCore

private let token = "s3cret-T0ken"

/// What the peer saw, as it echoes it in /ask's reply or /voice's heard.
private struct Seen {
    let json: JSONValue
    init(_ text: String) throws { json = try JSONValue.parse(text) }
    var method: String? { json["method"]?.stringValue }
    var route: String? { json["route"]?.stringValue }
    var query: String? { json["query"]?.stringValue }
    var authorization: String? { json["authorization"]?.stringValue }
    var contentType: String? { json["contentType"]?.stringValue }
    var expect: JSONValue? { json["expect"] }
    var body: Data? { json["body"]?.stringValue.flatMap { Data(base64Encoded: $0) } }
}

/// Calls one route and returns the error it threw, if any.
private func failure(of call: () async throws(SatelliteError) -> Void) async -> SatelliteError? {
    do {
        try await call()
        return nil
    } catch {
        return error
    }
}

@Suite("talking to the Parlour server over HTTP", .timeLimit(.minutes(1)))
struct ParlourClientTests {
    @Test("health and models are read from a well-behaved server")
    func healthAndModels() async throws {
        try await MiniServer.with { server in
            let client = ParlourClient(baseURL: server.url("ok") + "/", token: token, http: HTTPClient())
            #expect(try await client.health() == ServerHealthAnswer(ok: true, tools: 3, cloud: false, running: 1, waiting: 0))
            try await client.models()
        }
    }

    @Test("ask posts JSON with the bearer header exactly and leaves out an empty room")
    func ask() async throws {
        try await MiniServer.with { server in
            let client = ParlourClient(baseURL: server.url("ok"), token: token, http: HTTPClient())

            let answer = try await client.ask(text: "what time is it", client: "kitchen", room: "Living room")
            #expect(answer.via == "local")
            let seen = try Seen(answer.reply)
            #expect(seen.method == "POST")
            #expect(seen.route == "/ask")
            #expect(seen.query == "")
            #expect(seen.authorization == "Bearer \(token)")
            #expect(seen.contentType == "application/json")
            #expect(try seen.body.map(JSONValue.parse) == ["text": "what time is it", "client": "kitchen", "room": "Living room"])

            let roomless = try Seen(try await client.ask(text: "hi", client: "kitchen", room: "").reply)
            #expect(try roomless.body.map(JSONValue.parse) == ["text": "hi", "client": "kitchen"])
        }
    }

    @Test("voice posts the WAV with a percent-encoded query and decodes the reply audio")
    func voice() async throws {
        try await MiniServer.with { server in
            let client = ParlourClient(baseURL: server.url("ok"), token: token, http: HTTPClient())
            // Larger than 1 KiB, where curl would otherwise ask the server for "100 Continue" first.
            let wav = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }

            let answer = try await client.voice(wav: wav, client: "kitchen-1", room: "Living room + den/2&more")
            #expect(answer.reply == "It is four.")
            #expect(answer.via == "cloud")
            #expect(answer.audio == Array("RIFF\u{24}\0\0\0WAVEfmt fake reply audio".utf8))
            let seen = try Seen(answer.heard)
            #expect(seen.method == "POST")
            #expect(seen.route == "/voice")
            #expect(seen.query == "client=kitchen-1&room=Living%20room%20%2B%20den%2F2%26more")
            #expect(seen.authorization == "Bearer \(token)")
            #expect(seen.contentType == "audio/wav")
            #expect(seen.expect == .null)
            #expect(seen.body.map(Array.init) == wav)

            let roomless = try Seen(try await client.voice(wav: wav, client: "kitchen", room: "").heard)
            #expect(roomless.query == "client=kitchen")
        }
    }

    @Test("a client without a token sends no Authorization header")
    func noToken() async throws {
        try await MiniServer.with { server in
            let client = ParlourClient(baseURL: server.url("ok"), token: nil, http: HTTPClient())
            let seen = try Seen(try await client.ask(text: "hi", client: "kitchen", room: "").reply)
            #expect(seen.authorization == nil)
        }
    }

    struct Misbehaviour: Sendable, CustomTestStringConvertible {
        let mode: String
        let code: ErrorCode
        let message: String
        var testDescription: String { mode }
    }

    @Test("each misbehaviour of the server becomes its error, and no message carries the token or the query", arguments: [
        Misbehaviour(mode: "refuse", code: .tokenRefused, message: "The server refused the token. Pair again with parlourctl pair LINK, or set it with parlourctl token set."),
        Misbehaviour(mode: "fail", code: .serverRefused, message: "the kitchen is on fire"),
        Misbehaviour(mode: "plain", code: .serverRefused, message: "The server answered ROUTE with status 502 and gave no reason."),
        Misbehaviour(mode: "redirect", code: .serverRefused, message: "The server answered ROUTE with a redirect (status 302) to http://127.0.0.1:NOBODY, which the satellite never follows: nothing was sent there, and it will ask the pinned server again. If the server has really moved, pin its new address with parlourctl use URL (or pair again)."),
        Misbehaviour(mode: "garbage", code: .badAnswer, message: "The server's answer to ROUTE is not JSON."),
        Misbehaviour(mode: "wrongtypes", code: .badAnswer, message: "The server's answer to ROUTE has no reply string."),
        Misbehaviour(mode: "cut", code: .badAnswer, message: "The server closed the connection in the middle of its answer to ROUTE."),
    ])
    func misbehaviour(_ m: Misbehaviour) async throws {
        try await MiniServer.with { server in
            let client = ParlourClient(baseURL: server.url(m.mode), token: token, http: HTTPClient())
            let fromAsk = await failure { () async throws(SatelliteError) in _ = try await client.ask(text: "hi", client: "kitchen", room: "den") }
            let fromVoice = await failure { () async throws(SatelliteError) in _ = try await client.voice(wav: Array([1, 2, 3]), client: "kitchen", room: "den") }
            let message = m.message.replacingOccurrences(of: "NOBODY", with: String(server.nobodyPort))
            #expect(fromAsk == SatelliteError(m.code, message.replacingOccurrences(of: "ROUTE", with: "/ask")))
            #expect(fromVoice == SatelliteError(m.code, message.replacingOccurrences(of: "ROUTE", with: "/voice")))
            for error in [fromAsk, fromVoice].compactMap({ $0 }) {
                #expect(!error.message.contains(token))
                #expect(!error.message.contains("client="))
            }
        }
    }

    @Test("reply audio that is not base64 is a bad answer")
    func badAudio() async throws {
        try await MiniServer.with { server in
            let client = ParlourClient(baseURL: server.url("badaudio"), token: token, http: HTTPClient())
            let error = await failure { () async throws(SatelliteError) in _ = try await client.voice(wav: Array([1]), client: "kitchen", room: "") }
            #expect(error == SatelliteError(.badAnswer, "The server's answer to /voice has audio that is not valid base64."))
        }
    }

    @Test("a port with nothing listening is server_unreachable, naming the URL without its query")
    func nothingListening() async throws {
        try await MiniServer.with { server in
            let base = "http://127.0.0.1:\(server.nobodyPort)"
            let client = ParlourClient(baseURL: base, token: token, http: HTTPClient())
            let error = await failure { () async throws(SatelliteError) in _ = try await client.voice(wav: Array([1]), client: "kitchen", room: "den") }
            #expect(error?.code == .serverUnreachable)
            #expect(error?.message.contains("\(base)/voice: nothing accepted the connection") == true)
            #expect(error?.message.contains(token) == false)
            #expect(error?.message.contains("?") == false)
        }
    }

    @Test("a host name that does not resolve is server_unreachable")
    func unresolvable() async throws {
        let client = ParlourClient(baseURL: "http://nonexistent.invalid:8765", token: token, http: HTTPClient())
        let error = await failure { () async throws(SatelliteError) in _ = try await client.health() }
        #expect(error?.code == .serverUnreachable)
        #expect(error?.message.contains("host name in http://nonexistent.invalid:8765/health") == true)
    }

    @Test("a server slower than the total timeout is a timeout")
    func slowServer() async throws {
        try await MiniServer.with { server in
            let client = ParlourClient(baseURL: server.url("slow"), token: token, http: HTTPClient(), timeout: .seconds(1), pipelineTimeout: .seconds(1))
            let error = await failure { () async throws(SatelliteError) in _ = try await client.ask(text: "hi", client: "kitchen", room: "") }
            #expect(error == SatelliteError(.timeout, "The server did not answer /ask within 1 s. It may be busy; try again."))
        }
    }

    @Test("an answer over the limit is a bad answer")
    func tooLargeThroughClient() async throws {
        try await MiniServer.with { server in
            let client = ParlourClient(baseURL: server.url("big"), token: token, http: HTTPClient(bodyLimit: 1024))
            let error = await failure { () async throws(SatelliteError) in _ = try await client.ask(text: "hi", client: "kitchen", room: "") }
            #expect(error == SatelliteError(.badAnswer, "The server's answer to /ask is larger than 1 KiB, more than the satellite accepts."))
        }
    }
}
