// A recording whose every sample names its place in it, so a test can tell a
// period lost (or repeated) at a hand-over from one that follows on.
enum NumberedRamp {
    /// Sample i is i·7 (wrapping): 7 is odd, so each of 65536 consecutive values names its place.
    static func samples(_ count: Int) -> [Int16] { (0..<count).map { Int16(truncatingIfNeeded: $0 * 7) } }

    /// The place of `sample` in `samples`, modulo 65536 (7 · 28087 ≡ 1 mod 2^16).
    static func place(_ sample: Int16) -> Int { Int(UInt16(bitPattern: sample) &* 28087) }
}
