import Testing
@testable import SatelliteCore

@Suite("an HTTP answer's head, as the client keeps it")
struct AnswerHeadersTests {
    private func read(_ lines: [String]) -> (AnswerHeaders, refused: Bool) {
        var head = AnswerHeaders()
        for line in lines where !head.read(Array((line + "\r\n").utf8)) { return (head, true) }
        return (head, false)
    }

    @Test("lengths that agree are one length; lengths that disagree refuse the answer", arguments: [
        (["HTTP/1.1 200 OK", "Content-Length: 2"], false), (["HTTP/1.1 200 OK", "Content-Length: 2", "content-length:  2 "], false),
        (["HTTP/1.1 200 OK", "Content-Length: 2, 2"], false), (["HTTP/1.1 200 OK", "Content-Length: 2", "Content-Length: 4"], true),
        (["HTTP/1.1 200 OK", "Content-Length: 2,4"], true), (["HTTP/1.1 200 OK", "Content-Length: 2,"], true),
        // A 1xx's head is its own: the answer's starts afresh.
        (["HTTP/1.1 100 Continue", "Content-Length: 9", "", "HTTP/1.1 200 OK", "Content-Length: 2"], false),
    ])
    func lengths(lines: [String], refused: Bool) {
        #expect(read(lines).refused == refused)
    }

    @Test("a Location is kept as sent, a length beside an encoding frames the body two ways, and a new head forgets both")
    func locationAndEncoding() {
        let (redirect, _) = read(["HTTP/1.1 302 Found", "Location:\t/elsewhere?x=1 ", "Content-Length: 0"])
        #expect(redirect.location == "/elsewhere?x=1" && !redirect.framedTwoWays)
        let (both, refused) = read(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "Content-Length: 3"])
        #expect(!refused && both.framedTwoWays)
        #expect(read(["HTTP/1.1 302 Found", "Location: /x", "HTTP/1.1 200 OK"]).0 == AnswerHeaders())
        #expect(read(["HTTP/1.1 200 OK", "no colon here", ": empty name"]).0 == AnswerHeaders())
    }
}
