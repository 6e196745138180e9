import Testing
import ControlCore

@Suite("finding text in a string without the regex library")
struct StringSearchTests {
    @Test("the first occurrence, after a false start, or none", arguments: [
        ("http://den.local", "://", 4), ("a::://b", "://", 3), ("ab", "abc", nil), ("", "x", nil), ("xyz", "", nil),
        ("é://", "://", 1), ("aaab", "aab", 1),
    ] as [(String, String, Int?)])
    func first(text: String, piece: String, offset: Int?) {
        let found = text.range(ofText: piece)
        #expect(found.map { text.distance(from: text.startIndex, to: $0.lowerBound) } == offset)
        if let found { #expect(text[found] == piece) }
    }
}
