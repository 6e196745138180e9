// URLParts against FoundationEssentials' URLComponents, which it replaced in the
// daemon: the tests may link Foundation, so each URL is read by both and the
// parts the daemon uses must agree. URLComponents escapes what RFC 3986 does not
// allow (a space, "ü", a "%" without hex, a second "#") and reads on; URLParts
// refuses such a URL, which the daemon never forms itself.
import Foundation
import SatelliteCore
import Testing

@Suite("URLParts reads a URL as URLComponents did")
struct URLPartsTests {
    static let urls = [
        "http://den.local:8765", "http://den.local:8765/", "https://parlour.example", "HTTP://Den.Local:8765",
        "http://192.168.1.20:8765", "http://[fe80::1]:8765", "http://[fe80::1%25eth0]:8765", "http://[::1]",
        "ws://den.local:8765/listen?client=kitchen&room=Living%20room", "wss://den.local/listen?a=b#frag",
        "http://user@den.local", "http://user:secret@den.local:1/", "http://den.local:", "http://den.local:99999",
        "http://den.local:0", "http://den.local:12345678901234567890", "http://den.local:8a",
        "http://den%2Elocal:8765", "http://den%0D%0AX-Injected:%20yes.local/", "http://den.local/a%20b",
        "http://", "http:///path", "http:den.local", "den.local:8765", "://den.local", "1http://den.local",
        "http://den.local?x", "http://den.local#", "http://[fe80::1", "http://[fe80::1]x",
        "http://den:local:8765", "http://den.local/path?q=1&r=2#f",
        "http://a@b@den.local", "http://den.local%40evil.example",
        "https://[2001:db8::1]:8443/", "http://den.local:8765/v1/models", "",
    ]

    @Test("each URL reads the same", arguments: urls)
    func same(_ text: String) {
        let ours = URLParts(text)
        let theirs = URLComponents(string: text)
        // Only URLs with an authority matter here: both the config and the connections need a host.
        guard let theirs, theirs.host != nil, text.contains("://") else {
            #expect(ours == nil || ours?.host.isEmpty == true, "\(text)")
            return
        }
        guard let ours else {
            Issue.record("URLParts refused \(text), which URLComponents reads")
            return
        }
        #expect(ours.scheme == theirs.scheme)
        #expect((ours.user != nil) == (theirs.user != nil || theirs.password != nil))
        #expect(ours.host == theirs.host)
        #expect(ours.port == theirs.port || (ours.port ?? 0) > 65_535)
        #expect(ours.percentEncodedPath == theirs.percentEncodedPath)
        #expect(ours.percentEncodedQuery == theirs.percentEncodedQuery)
        #expect(ours.fragment == theirs.fragment)
    }

    @Test("what a connection needs is read from a URL")
    func parts() throws {
        let url = try #require(URLParts("wss://u@[fe80::1%25eth0]:8443/listen?client=k#x"))
        #expect(url.scheme == "wss" && url.user == "u" && url.host == "[fe80::1%eth0]" && url.port == 8443)
        #expect(url.authority == "u@[fe80::1%25eth0]:8443")
        #expect(url.percentEncodedPath == "/listen" && url.percentEncodedQuery == "client=k" && url.fragment == "x")
    }

    @Test("a character no URL holds, or a broken escape, makes it none")
    func refused() {
        for text in ["http://den.local/a b", "http://den .local", "http://den.local/\r\n", "http://den.local/%zz",
                     "http://den.local/%4", "http://dén.local", "http://den.local/ü", "http://den\0.local", "http:den.local",
                     "http://[fe80::1", "http://den.local/#a#b", "http://den.local\\@evil.example"] {
            #expect(URLParts(text) == nil, "\(text)")
        }
    }
}
