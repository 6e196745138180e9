import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("pairing link")
struct PairingLinkTests {
    private func link(_ text: String) throws -> PairingLink {
        try PairingLink.parse(text).get()
    }

    private func refusal(_ text: String) -> SatelliteError? {
        if case .failure(let error) = PairingLink.parse(text) { return error }
        return nil
    }

    @Test("the exact link the server's own test expects gives its address, token and name")
    func serversOwnLink() throws {
        let parsed = try link("parlour://pair?url=http%3A%2F%2Fden.local%3A8765&token=abc&name=Parlour%20on%20den")
        #expect(parsed == PairingLink(url: "http://den.local:8765", token: "abc", name: "Parlour on den"))
    }

    struct Valid: Sendable, CustomTestStringConvertible {
        let text: String
        let url: String
        let token: String
        let name: String
        let why: String
        var testDescription: String { why }
    }

    static let valid: [Valid] = [
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local%3A8765&token=abc",
              url: "http://den.local:8765", token: "abc", name: "den.local", why: "no name: the host stands in, without the port"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local%3A8765&token=abc&name=",
              url: "http://den.local:8765", token: "abc", name: "den.local", why: "an empty name counts as missing"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local%3A8765&token=abc&name=%20%20",
              url: "http://den.local:8765", token: "abc", name: "den.local", why: "a name of spaces counts as missing"),
        .init(text: "PARLOUR://PAIR?url=http%3A%2F%2Fden.local&token=abc&name=Den",
              url: "http://den.local", token: "abc", name: "Den", why: "scheme and host in capitals"),
        .init(text: "Parlour://Pair/?url=http%3A%2F%2Fden.local&token=abc&name=Den",
              url: "http://den.local", token: "abc", name: "Den", why: "mixed case, and a slash before the query"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local&token=a+b%2Bc&name=A+B",
              url: "http://den.local", token: "a+b+c", name: "A+B", why: "a + stays a plus, in the token and the name"),
        .init(text: "  parlour://pair?url=http%3A%2F%2Fden.local&token=abc\n",
              url: "http://den.local", token: "abc", name: "den.local", why: "white space around a pasted link"),
        .init(text: "parlour://pair?url=%20http%3A%2F%2Fden.local%20&token=%20abc%20&name=%20Den%20",
              url: "http://den.local", token: "abc", name: "Den", why: "values are trimmed"),
        .init(text: "parlour://pair?token=abc&name=Den&url=https%3A%2F%2Fparlour.example%3A8443",
              url: "https://parlour.example:8443", token: "abc", name: "Den", why: "https, and the keys in another order"),
        .init(text: "parlour://pair?url=HTTP%3A%2F%2FDen.Local%3A8765&token=abc",
              url: "HTTP://Den.Local:8765", token: "abc", name: "Den.Local", why: "the url's scheme in capitals"),
        .init(text: "parlour://pair?url=http%3A%2F%2F%5B%3A%3A1%5D%3A8765&token=abc",
              url: "http://[::1]:8765", token: "abc", name: "::1", why: "an IPv6 server: the name is the address without brackets"),
        .init(text: "parlour://pair?url=http%3A%2F%2F192.168.1.20%3A8765&token=abc",
              url: "http://192.168.1.20:8765", token: "abc", name: "192.168.1.20", why: "an IPv4 server"),
        .init(text: "parlour://pair?url=http://den.local:8765&token=abc",
              url: "http://den.local:8765", token: "abc", name: "den.local", why: "a url left unencoded is still read"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local&token=abc&name=Caf%C3%A9%20%F0%9F%8E%B5",
              url: "http://den.local", token: "abc", name: "Café 🎵", why: "UTF-8 in the name"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local&token=first&token=second",
              url: "http://den.local", token: "first", name: "den.local", why: "a repeated key: the first wins"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local&token=abc&extra=%zz&room=x",
              url: "http://den.local", token: "abc", name: "den.local", why: "unknown keys are ignored, even badly encoded ones"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local&&token=abc&",
              url: "http://den.local", token: "abc", name: "den.local", why: "empty pieces between & are skipped"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local&token=abc==",
              url: "http://den.local", token: "abc==", name: "den.local", why: "an = inside a value is part of it"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local%2Fparlour&token=abc#frag",
              url: "http://den.local/parlour", token: "abc", name: "den.local", why: "a fragment is not part of the query"),
    ]

    @Test("valid links", arguments: valid)
    func validLinks(_ c: Valid) throws {
        #expect(try link(c.text) == PairingLink(url: c.url, token: c.token, name: c.name))
    }

    struct Refused: Sendable, CustomTestStringConvertible {
        let text: String
        /// A piece of the reason that says what was wrong.
        let reason: String
        let why: String
        var testDescription: String { why }
    }

    static let refused: [Refused] = [
        .init(text: "", reason: "not a pairing link", why: "nothing at all"),
        .init(text: "   \n", reason: "not a pairing link", why: "only white space"),
        .init(text: "just some text", reason: "not a pairing link", why: "plain text"),
        .init(text: "SuperSecretToken42", reason: "not a pairing link", why: "a token pasted alone"),
        .init(text: "https://example.com/?url=http%3A%2F%2Fden&token=SuperSecretToken42",
              reason: "not a Parlour pairing link", why: "another scheme"),
        .init(text: "parlour:pair?url=http%3A%2F%2Fden&token=SuperSecretToken42",
              reason: "not a pairing link", why: "no // after the scheme"),
        .init(text: "parlour://open?url=http%3A%2F%2Fden&token=SuperSecretToken42", reason: "not for pairing", why: "another host"),
        .init(text: "parlour://pair:80?url=http%3A%2F%2Fden&token=SuperSecretToken42", reason: "not for pairing", why: "a port on pair"),
        .init(text: "parlour://pair/x?url=http%3A%2F%2Fden&token=SuperSecretToken42", reason: "not for pairing", why: "a path after pair"),
        .init(text: "parlour://pair", reason: "no server address", why: "no query at all"),
        .init(text: "parlour://pair?token=SuperSecretToken42", reason: "no server address", why: "no url"),
        .init(text: "parlour://pair?url=&token=SuperSecretToken42", reason: "no server address", why: "an empty url"),
        .init(text: "parlour://pair?url=%20&token=SuperSecretToken42", reason: "no server address", why: "a url of spaces"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local%3A8765", reason: "no token", why: "no token"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local%3A8765&token=", reason: "no token", why: "an empty token"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local%3A8765&token", reason: "no token", why: "a token key without ="),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local%3A8765&token=%20%09", reason: "no token", why: "a token of white space"),
        .init(text: "parlour://pair?url=tel%3A123&token=SuperSecretToken42", reason: "not an http or https", why: "url=tel:"),
        .init(text: "parlour://pair?url=ftp%3A%2F%2Fden.local&token=SuperSecretToken42", reason: "not an http or https", why: "url=ftp:"),
        .init(text: "parlour://pair?url=http%3A%2F%2F&token=SuperSecretToken42", reason: "not an http or https", why: "a url with no host"),
        .init(text: "parlour://pair?url=http%3A%2F%2F%3A8765&token=SuperSecretToken42", reason: "not an http or https", why: "a url with only a port"),
        .init(text: "parlour://pair?url=den.local%3A8765&token=SuperSecretToken42", reason: "not an http or https", why: "a url without a scheme"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local%3A99999&token=SuperSecretToken42", reason: "not an http or https", why: "a port out of range"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local&token=Super%2GSecretToken42", reason: "token is not correctly percent-encoded",
              why: "a bad escape in the token"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local&token=SuperSecretToken42%", reason: "token is not correctly percent-encoded",
              why: "a % at the very end"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local&token=SuperSecretToken42%4", reason: "token is not correctly percent-encoded",
              why: "a % with one hex digit"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local&token=SuperSecretToken42%FF", reason: "token is not correctly percent-encoded",
              why: "bytes that are not UTF-8"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local&token=SuperSecretToken42&name=Den%", reason: "name is not correctly percent-encoded",
              why: "a bad escape in the name"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden%zz&token=SuperSecretToken42", reason: "url is not correctly percent-encoded",
              why: "a bad escape in the url"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local&token=Super SecretToken42", reason: "space or line break",
              why: "a space inside the link"),
        .init(text: "parlour://pair?url=http%3A%2F%2Fden.local&tok\nen=SuperSecretToken42", reason: "space or line break",
              why: "a link broken across lines"),
    ]

    @Test("refused links say why, with invalid_link, and never quote the token", arguments: refused)
    func refusedLinks(_ c: Refused) throws {
        let error = try #require(refusal(c.text))
        #expect(error.code == .invalidLink)
        #expect(error.message.contains(c.reason))
        for secret in ["SuperSecretToken42", "Super", "Secret"] { #expect(!error.message.contains(secret)) }
        // Every refusal says what to do, not only what is wrong.
        #expect(error.message.contains("Copy"))
    }

    @Test("percent-decoding leaves a plus alone and refuses a broken escape", arguments: [
        ("a+b", "a+b"), ("a%2Bb", "a+b"), ("%20", " "), ("%2f%2F", "//"), ("", ""),
    ])
    func decoding(raw: String, decoded: String) {
        #expect(PercentEscapes.decodedText(raw) == decoded)
    }

    @Test("server addresses give host and port, with the scheme's port by default", arguments: [
        ("http://den.local:8765", "den.local", 8765), ("http://den.local", "den.local", 80),
        ("https://den.local", "den.local", 443), ("http://[fe80::1]:8765/", "fe80::1", 8765),
        ("http://den.local:81/x?y#z", "den.local", 81), ("HTTPS://Den.Local.:8443", "Den.Local.", 8443),
        ("http://den.local:/", "den.local", 80),
    ])
    func addresses(url: String, host: String, port: Int) throws {
        let address = try #require(ServerAddress(url))
        #expect(address.host == host)
        #expect(address.port == port)
    }

    @Test("not server addresses", arguments: [
        "", "den.local", "tel:123", "http:den.local", "http://", "http://:80", "http://den.local:http",
        "http://den.local:0", "http://[::1", "http://[::1]x", "ws://den.local", "http://den local",
        "http://user:pw@den.local:81/x", "http://user@den.local", "https://:pw@den.local",
    ])
    func notAddresses(url: String) {
        #expect(ServerAddress(url) == nil)
    }

    @Test("one address is the same host and port, with case and a trailing dot ignored")
    func sameAddress() throws {
        let address = try #require(ServerAddress("http://Den.Local.:8765"))
        #expect(address.isAt(host: "den.local", port: 8765))
        #expect(!address.isAt(host: "den.local", port: 8766))
        #expect(!address.isAt(host: "kitchen.local", port: 8765))
        #expect(try #require(ServerAddress("http://[fe80::1]:1")).isAt(host: "FE80::1", port: 1))
    }
}
