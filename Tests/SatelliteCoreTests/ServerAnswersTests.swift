import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("reading the server's answers")
struct ServerAnswersTests {
    private func data(_ text: String) -> [UInt8] { Array(text.utf8) }

    // MARK: statuses

    @Test("a 2xx status is no refusal", arguments: [200, 201, 202, 204, 299])
    func successIsNoRefusal(status: Int) {
        #expect(ServerAnswers.refusal(status: status, body: data("whatever"), route: .ask, sentToken: true) == nil)
    }

    @Test("a 401 with a token sent is token_refused, whatever the body says", arguments: [
        #"{"error":"a bearer token is required"}"#, "", "<html>no</html>",
    ])
    func unauthorised(body: String) {
        let error = ServerAnswers.refusal(status: 401, body: data(body), route: .voice, sentToken: true)
        #expect(error == SatelliteError(.tokenRefused, "The server refused the token. Pair again with parlourctl pair LINK, or set it with parlourctl token set."))
    }

    @Test("a 401 with no token sent says none is set")
    func unauthorisedWithoutToken() {
        let error = ServerAnswers.refusal(status: 401, body: data(#"{"error":"a bearer token is required"}"#), route: .models, sentToken: false)
        #expect(error?.code == .notPaired)
        #expect(error?.message.contains("parlourctl pair LINK") == true)
    }

    @Test("the server's own words pass through unchanged", arguments: [
        (400, "the body is not JSON"), (400, "no audio"), (403, "this server answers its own machine only"),
        (404, "no such route"), (413, "body too large"), (415, "send application/json"), (500, "internal error"),
        (503, "ünïcode “quoted” words\nand a second line"),
    ])
    func serverWords(status: Int, words: String) {
        let body = JSONValue.object(["error": .string(words)]).data
        #expect(ServerAnswers.refusal(status: status, body: body, route: .ask, sentToken: true) == SatelliteError(.serverRefused, words))
    }

    @Test("a refusal without an error sentence names the status and the route", arguments: [
        (500, "oops"), (502, "<html>Bad Gateway</html>"), (404, ""), (400, #"{"error":5}"#), (500, #"{"error":""}"#),
        (503, #"["error"]"#), (418, #"{"message":"teapot"}"#),
    ])
    func refusalWithoutWords(status: Int, body: String) {
        let error = ServerAnswers.refusal(status: status, body: data(body), route: .voice, sentToken: true)
        #expect(error == SatelliteError(.serverRefused, "The server answered /voice with status \(status) and gave no reason."))
    }

    @Test("a redirect is an answer, refused, and not followed", arguments: [301, 302, 307, 308])
    func redirect(status: Int) {
        let error = ServerAnswers.refusal(status: status, body: data(#"{"error":"go elsewhere"}"#), route: .ask, sentToken: true)
        #expect(error?.code == .serverRefused)
        #expect(error?.message.contains("redirect (status \(status))") == true)
    }

    // MARK: bodies

    @Test("a full health answer is read")
    func health() throws {
        let answer = try ServerAnswers.health(data(#"{"ok":true,"tools":7,"cloud":false,"running":1,"waiting":0}"#))
        #expect(answer == ServerHealthAnswer(ok: true, tools: 7, cloud: false, running: 1, waiting: 0))
    }

    @Test("an older server's health answer has no queue figures")
    func olderHealth() throws {
        let answer = try ServerAnswers.health(data(#"{"ok":true,"tools":3,"cloud":true}"#))
        #expect(answer == ServerHealthAnswer(ok: true, tools: 3, cloud: true))
    }

    @Test("an ask answer is read, unknown keys ignored")
    func ask() throws {
        let answer = try ServerAnswers.ask(data(#"{"reply":"It is four.","via":"cloud","extra":[1]}"#))
        #expect(answer == AskAnswer(reply: "It is four.", via: "cloud"))
    }

    @Test("a voice answer's audio is decoded from base64")
    func voice() throws {
        let wav = Array("RIFF....WAVEfmt ".utf8) + [0, 1, 2, 255]
        let body = JSONValue.object([
            "heard": "what time is it", "reply": "Four.", "via": "local", "audio": .string(Base64.encode(wav)),
        ]).data
        #expect(try ServerAnswers.voice(body) == VoiceAnswer(heard: "what time is it", reply: "Four.", via: "local", audio: wav))
    }

    @Test("a voice answer with nothing heard has no audio")
    func voiceNothingHeard() throws {
        let answer = try ServerAnswers.voice(data(#"{"heard":"","reply":"","via":"local","audio":null}"#))
        #expect(answer == VoiceAnswer(heard: "", reply: "", via: "local", audio: nil))
    }

    @Test("a models list proves the token")
    func models() throws {
        try ServerAnswers.models(data(#"{"object":"list","data":[{"id":"parlour","object":"model","created":0,"owned_by":"parlour"}]}"#))
    }

    struct Malformed: Sendable, CustomTestStringConvertible {
        let route: ServerRoute
        let body: String
        let message: String
        var testDescription: String { "\(route.rawValue): \(body)" }
    }

    @Test("a 2xx body that is not what the route promises is bad_answer, saying what was wrong", arguments: [
        Malformed(route: .voice, body: "", message: "The server's answer to /voice is not JSON."),
        Malformed(route: .voice, body: "<html>hello</html>", message: "The server's answer to /voice is not JSON."),
        Malformed(route: .ask, body: #"{"reply":"cut"#, message: "The server's answer to /ask is not JSON."),
        Malformed(route: .ask, body: #"["reply"]"#, message: "The server's answer to /ask is an array, not a JSON object."),
        Malformed(route: .ask, body: #""text""#, message: "The server's answer to /ask is a string, not a JSON object."),
        Malformed(route: .ask, body: #"{"via":"local"}"#, message: "The server's answer to /ask has no reply string."),
        Malformed(route: .ask, body: #"{"reply":5,"via":"local"}"#, message: "The server's answer to /ask has no reply string."),
        Malformed(route: .ask, body: #"{"reply":null,"via":"local"}"#, message: "The server's answer to /ask has no reply string."),
        Malformed(route: .ask, body: #"{"reply":"hi"}"#, message: "The server's answer to /ask has no via string."),
        Malformed(route: .voice, body: #"{"reply":"","via":"local","audio":null}"#, message: "The server's answer to /voice has no heard string."),
        Malformed(route: .voice, body: #"{"heard":"","via":"local","audio":null}"#, message: "The server's answer to /voice has no reply string."),
        Malformed(route: .voice, body: #"{"heard":"","reply":"","audio":null}"#, message: "The server's answer to /voice has no via string."),
        Malformed(route: .voice, body: #"{"heard":"","reply":"x","via":"local","audio":"!!not base64!!"}"#, message: "The server's answer to /voice has audio that is not valid base64."),
        Malformed(route: .voice, body: #"{"heard":"","reply":"x","via":"local","audio":"QUJD"}"# + "garbage", message: "The server's answer to /voice is not JSON."),
        Malformed(route: .voice, body: #"{"heard":"","reply":"x","via":"local","audio":12}"#, message: "The server's answer to /voice has audio that is neither base64 text nor null."),
        Malformed(route: .health, body: #"{"tools":1,"cloud":false}"#, message: "The server's answer to /health has no ok true or false."),
        Malformed(route: .health, body: #"{"ok":1,"tools":1,"cloud":false}"#, message: "The server's answer to /health has no ok true or false."),
        Malformed(route: .health, body: #"{"ok":true,"tools":1.5,"cloud":false}"#, message: "The server's answer to /health has no tools whole number."),
        Malformed(route: .health, body: #"{"ok":true,"tools":1,"cloud":"no"}"#, message: "The server's answer to /health has no cloud true or false."),
        Malformed(route: .health, body: #"{"ok":true,"tools":1,"cloud":false,"running":"2"}"#, message: "The server's answer to /health has running that is not a whole number."),
        Malformed(route: .models, body: #"{"object":"list"}"#, message: "The server's answer to /v1/models has no data list."),
        Malformed(route: .models, body: "null", message: "The server's answer to /v1/models is null, not a JSON object."),
    ])
    func malformed(_ c: Malformed) {
        let body = data(c.body)
        let thrown: SatelliteError?
        do {
            switch c.route {
            case .health: _ = try ServerAnswers.health(body)
            case .models: try ServerAnswers.models(body)
            case .ask: _ = try ServerAnswers.ask(body)
            case .voice: _ = try ServerAnswers.voice(body)
            default: Issue.record("\(c.route.rawValue) is read in ServerAdminTests")
            }
            thrown = nil
        } catch {
            thrown = error
        }
        #expect(thrown == SatelliteError(.badAnswer, c.message))
    }

    // MARK: transfer failures

    @Test("each way a transfer fails maps to its code", arguments: [
        (TransferFailure.couldNotConnect, ErrorCode.serverUnreachable),
        (.couldNotResolve, .serverUnreachable),
        (.connectTimeout(seconds: 5), .serverUnreachable),
        (.timeout(seconds: 60), .timeout),
        (.closedMidAnswer, .badAnswer),
        (.tooLarge(limit: 16 << 20), .badAnswer),
        (.malformed, .badAnswer),
        (.cancelled, .internalError),
        (.other, .serverUnreachable),
    ])
    func transferFailure(kind: TransferFailure, code: ErrorCode) {
        #expect(ServerAnswers.failure(kind, route: .voice, url: "http://den.local:8765/voice", detail: "the client said so").code == code)
    }

    @Test("an unreachable server is named with its URL and the reason")
    func unreachableMessages() {
        let url = "http://den.local:8765/ask"
        #expect(ServerAnswers.failure(.couldNotConnect, route: .ask, url: url, detail: "").message.contains("connect to the server at \(url): nothing accepted"))
        #expect(ServerAnswers.failure(.couldNotResolve, route: .ask, url: url, detail: "").message.contains("host name in \(url)"))
        #expect(ServerAnswers.failure(.connectTimeout(seconds: 5), route: .ask, url: url, detail: "").message.contains("at \(url) within 5 s"))
        #expect(ServerAnswers.failure(.other, route: .ask, url: url, detail: "SSL connect error").message == "The request to \(url) failed: SSL connect error.")
    }

    @Test("timeouts, cut answers and oversized answers say what happened")
    func otherMessages() {
        #expect(ServerAnswers.failure(.timeout(seconds: 60), route: .voice, url: "u", detail: "").message == "The server did not answer /voice within 60 s. It may be busy; try again.")
        #expect(ServerAnswers.failure(.timeout(seconds: 1.5), route: .ask, url: "u", detail: "").message.contains("within 1.5 s"))
        #expect(ServerAnswers.failure(.closedMidAnswer, route: .voice, url: "u", detail: "").message == "The server closed the connection in the middle of its answer to /voice.")
        #expect(ServerAnswers.failure(.tooLarge(limit: 16 << 20), route: .voice, url: "u", detail: "").message.contains("larger than 16 MiB"))
        #expect(ServerAnswers.failure(.tooLarge(limit: 1000), route: .voice, url: "u", detail: "").message.contains("larger than 1000 bytes"))
        #expect(ServerAnswers.failure(.malformed, route: .ask, url: "u", detail: "the server's answer is not HTTP").message
            == "The server's answer to /ask could not be read: the server's answer is not HTTP.")
    }

    @Test("a URL is shown without its query, fragment or user info", arguments: [
        ("http://den.local:8765/voice?client=kitchen&token=secret", "http://den.local:8765/voice"),
        ("http://den.local:8765/ask#token=secret", "http://den.local:8765/ask"),
        ("http://user:secret@den.local:8765/ask", "http://den.local:8765/ask"),
        ("https://user@[::1]:8765", "https://[::1]:8765"),
        ("http://den.local:8765/a@b", "http://den.local:8765/a@b"),
        ("http://den.local:8765", "http://den.local:8765"),
    ])
    func displayURL(url: String, shown: String) {
        #expect(ServerAnswers.displayURL(url) == shown)
    }
}
