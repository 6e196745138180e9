// Numbers formatted without Foundation (String(printf:)): the same digits
// String(format:) gave, ties rounded as printf rounds them, long texts whole.
import Testing
import SatelliteCore

@Suite("formatting numbers as printf does")
struct PrintfTests {
    @Test("one decimal, a width, a sign, and printf's own rounding", arguments: [
        ("%.1f", 1.25, "1.2"), ("%.1f", 2.0, "2.0"), ("%.1f dBFS", -23.46, "-23.5 dBFS"),
        ("%6.1f dBFS", -4.0, "  -4.0 dBFS"), ("%.1f s", 1.5, "1.5 s"), ("%.1f", 0.05, "0.1"),
    ])
    func decimals(format: String, value: Double, expected: String) {
        #expect(String(printf: format, value) == expected)
    }

    @Test("a text longer than the first buffer comes out whole")
    func long() {
        let text = String(printf: "%0200.1f", 3.25)
        #expect(text.count == 200)
        #expect(text.hasSuffix("3.2"))
    }
}
