// The callback URL: which URLs are taken, how the outcome is added to the
// caller's own query, and what the journal may show of it.
import Foundation
import Testing
import SatelliteCore

@Suite("callback URLs")
struct CallbackURLTests {
    static let response: JSONValue = ["heard": "turn off the lights", "reply": "Done.", "via": "local"]
    static var encoded: String { Base64URL.encode(response.data) }

    @Test("the outcome goes after the caller's query, which is kept as it came", arguments: [
        ("http://127.0.0.1:9000/done?ctx=abc&n=1", "http://127.0.0.1:9000/done?ctx=abc&n=1&"),
        ("http://h/cb", "http://h/cb?"),
        ("http://h", "http://h/?"),
        ("https://h:8443", "https://h:8443/?"),
        ("http://h?x=1", "http://h/?x=1&"),
        ("http://h/cb?", "http://h/cb?"),
        ("http://h/cb?x=1&", "http://h/cb?x=1&"),
        ("http://h/a&b", "http://h/a&b?"),
        ("http://h/cb?ctx=a%20b%26c", "http://h/cb?ctx=a%20b%26c&"),
        // A fragment is never sent over HTTP: it is dropped, and the outcome does not end up inside it.
        ("http://h/cb?ctx=1#part", "http://h/cb?ctx=1&"),
        ("http://h/cb#part?x", "http://h/cb?"),
        ("http://[::1]:9000/cb", "http://[::1]:9000/cb?"),
    ])
    func kept(given: String, prefix: String) throws {
        let url = try CallbackURL.parse(given).get()
        #expect(url.url(reporting: .cancelled(.nothingHeard)) == prefix + "status=cancelled&reason=nothing_heard")
    }

    @Test("each outcome has its own words")
    func outcomes() throws {
        let url = try CallbackURL.parse("http://h/cb?ctx=abc").get()
        #expect(url.url(reporting: .completed(Self.response)) == "http://h/cb?ctx=abc&status=completed&response=" + Self.encoded)
        #expect(url.url(reporting: .cancelled(.superseded)) == "http://h/cb?ctx=abc&status=cancelled&reason=superseded")
        #expect(url.url(reporting: .failure(.serverUnreachable, "The house cannot be reached."))
                == "http://h/cb?ctx=abc&status=error&error=server_unreachable")
    }

    @Test("response decodes back to the result's response")
    func decodes() throws {
        let url = try CallbackURL.parse("http://h/cb").get()
        let full = url.url(reporting: .completed(Self.response))
        let value = try #require(URLComponents(string: full)?.queryItems?.first { $0.name == "response" }?.value)
        #expect(try JSONValue.parse(try #require(Base64URL.decode(value))) == Self.response)
    }

    @Test("the journal sees the URL without its query, fragment or credentials")
    func display() throws {
        #expect(try CallbackURL.parse("http://h:9/cb?secret=1#f").get().display == "http://h:9/cb")
    }

    @Test("URLs a callback cannot go to are refused, saying why", arguments: [
        ("", "empty"),
        ("ftp://h/cb", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("javascript:alert(1)", "http:// or https://"),
        ("h/cb", "http:// or https://"),
        ("http://", "http:// or https://"),
        ("http://h:0/cb", "port"),
        ("http://h:99999/cb", "port"),
        ("http://user:pw@h/cb", "user name or password"),
        ("http://h/cb?status=mine", "\"status\""),
        ("http://h/cb?ctx=1&response", "\"response\""),
        ("http://h/cb?%65rror=1", "\"error\""),
        ("http://h/cb?reason=x", "\"reason\""),
        ("http://h/c b", "spaces"),
        ("http://h/cb\n", "control characters"),
        ("http://h/café", "outside ASCII"),
    ])
    func refused(text: String, says: String) {
        guard case .failure(let error) = CallbackURL.parse(text) else {
            Issue.record("\(text) was taken")
            return
        }
        #expect(error.code == .invalidRequest)
        #expect(error.message.contains(says), "\(error.message)")
        #expect(!error.message.contains("pw@"))
    }

    @Test("upper-case schemes and names that only look reserved are taken", arguments: [
        "HTTP://h/cb", "Https://h/cb", "http://h/cb?statuses=1&errors=2", "http://h/cb#status=1",
    ])
    func taken(text: String) {
        #expect((try? CallbackURL.parse(text).get()) != nil)
    }
}

@Suite("callback delivery rules")
struct CallbackPolicyTests {
    @Test("2xx is delivered, 5xx is tried again, anything else is refused for good", arguments: [
        (200, CallbackPolicy.Verdict.delivered), (204, .delivered), (299, .delivered),
        (500, .retry), (503, .retry), (599, .retry),
        (301, .refused), (302, .refused), (400, .refused), (404, .refused), (100, .refused),
    ])
    func verdicts(status: Int, verdict: CallbackPolicy.Verdict) {
        #expect(CallbackPolicy.verdict(status: status) == verdict)
    }

    @Test("four tries, waiting 1 s, 2 s and 4 s between them")
    func backoff() {
        var backoff = CallbackPolicy.backoff
        let waits = (1..<CallbackPolicy.attempts).map { _ in backoff.next() }
        #expect(waits == [.seconds(1), .seconds(2), .seconds(4)])
    }
}
