// base64url without padding, as a callback's `response` carries it: the URL-safe
// alphabet, no `=`, and every byte string back as it went in.
import Foundation
import Testing
import SatelliteCore

@Suite("base64url without padding")
struct Base64URLTests {
    @Test("RFC 4648's test vectors, with - and _ for + and / and no padding", arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
    ])
    func vectors(plain: String, encoded: String) {
        #expect(Base64URL.encode(Data(plain.utf8)) == encoded)
        #expect(Base64URL.decode(encoded) == Array(plain.utf8))
    }

    @Test("bytes that standard base64 writes with + and / come out as - and _")
    func urlAlphabet() {
        #expect(Base64URL.encode(Data([0xFB, 0xFF, 0xBF])) == "-_-_")
        #expect(Base64URL.encode(Data([0xFF])) == "_w")
        #expect(Base64URL.decode("-_-_") == [0xFB, 0xFF, 0xBF])
    }

    @Test("any bytes round-trip, and the text needs no escaping in a URL")
    func roundTrip() {
        var generator = SeededGenerator(seed: 0xB64)
        for length in 0..<200 {
            let data = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let text = Base64URL.encode(data)
            #expect(!text.contains(where: { "+/=%&?#".contains($0) }))
            #expect(text.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) == text)
            #expect(Base64URL.decode(text) == Array(data))
        }
    }

    @Test("a result's JSON survives the trip", arguments: [
        #"{"heard":"turn off the kitchen lights","reply":"Done. Éclair? 🍰","via":"local"}"#,
        #"{"reply":"a>b?c&d=e/f+g","via":"cloud"}"#,
    ])
    func json(text: String) throws {
        let response = try JSONValue.parse(text)
        let decoded = try #require(Base64URL.decode(Base64URL.encode(response.data)))
        #expect(try JSONValue.parse(decoded) == response)
    }

    @Test("text that is not unpadded base64url is refused", arguments: [
        "Zg==", "Zm8=", "+/8", "ab/c", "a", "Zm9vY", "Zm 9v", "Zm9v\n", "é",
    ])
    func refused(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test("standard base64, written by hand, matches Foundation's both ways")
    func standardMatchesFoundation() {
        var generator = SeededGenerator(seed: 0x64)
        for length in 0..<200 {
            let data = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let text = Base64.encode(data)
            #expect(text == data.base64EncodedString())
            #expect(Base64.decode(text) == Array(data))
        }
        for bad in ["Zg", "Zg=", "Z===", "Zm9v!", "Zm 9v", "=Zm9"] {
            #expect(Base64.decode(bad) == nil, "\(bad)")
            #expect(Data(base64Encoded: bad) == nil, "Foundation takes \(bad)")
        }
        // Foundation reads this as five bytes; padding in the middle is refused here.
        #expect(Base64.decode("Zm9vYg=a") == nil)
    }
}
