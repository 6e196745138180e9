import Testing
@testable import SatelliteCore

@Suite("a sibling's claim, encoded and decoded")
struct SiblingClaimTests {
    static let keys = HouseKeys(token: "test-token")
    static let kitchen = SiblingClaim(house: keys.house, session: 0x0102_0304_0506_0708, sequence: 9, levelDb: -23.456,
                                      probability: 0.97, ageMs: 12, name: "kitchen-pi", room: "Kitchen")

    /// `bytes` with a fresh tag over all but its last 32, so that only the change under test is wrong.
    static func retagged(_ bytes: [UInt8]) -> [UInt8] {
        let body = Array(bytes.dropLast(32))
        return body + SHA256.hmac(key: keys.claimKey, body)
    }

    static func changed(_ at: Int, to byte: UInt8, retag: Bool = true) -> [UInt8] {
        var bytes = kitchen.encoded(key: keys.claimKey)
        bytes[at] = byte
        return retag ? retagged(bytes) : bytes
    }

    @Test("a claim decodes to what was encoded, rounded to its units")
    func roundTrip() throws {
        let bytes = Self.kitchen.encoded(key: Self.keys.claimKey)
        #expect(bytes.count == 4 + 16 + 8 + 8 + 6 + 1 + 10 + 1 + 7 + 32)
        let claim = try SiblingClaim.decode(bytes, keys: Self.keys).get()
        #expect(claim == Self.kitchen)
        #expect(claim.levelCentiDb == -2346)
        #expect(claim.levelDb == -23.46)
        #expect(claim.probability == 9700)
        #expect(claim.ageMs == 12)
        #expect(claim.session == 0x0102_0304_0506_0708 && claim.sequence == 9)
    }

    @Test("values past a field's range are held at its ends", arguments: [
        (-400.0, 2.0, -5, Int16.min, UInt16(10_000), UInt16(0)),
        (400.0, -1.0, 70_000, Int16.max, UInt16(0), UInt16.max),
        (Double.nan, Double.nan, 0, Int16.min, UInt16(0), UInt16(0)),
        (-Double.infinity, Double.infinity, 1, Int16.min, UInt16(10_000), UInt16(1)),
    ])
    func clamped(level: Double, probability: Double, age: Int, centi: Int16, ten: UInt16, ageMs: UInt16) throws {
        let claim = SiblingClaim(house: Self.keys.house, session: 1, sequence: 1, levelDb: level, probability: probability,
                                 ageMs: age, name: "a", room: "")
        #expect(claim.levelCentiDb == centi && claim.probability == ten && claim.ageMs == ageMs)
        #expect(try SiblingClaim.decode(claim.encoded(key: Self.keys.claimKey), keys: Self.keys).get() == claim)
    }

    @Test("a long name and room are cut at a character to 128 bytes, so the largest claim fits")
    func longest() throws {
        let claim = SiblingClaim(house: Self.keys.house, session: .max, sequence: .max, levelDb: 0, probability: 1, ageMs: 0,
                                 name: String(repeating: "é", count: 100), room: String(repeating: "r", count: 300))
        #expect(claim.name == String(repeating: "é", count: 64))
        #expect(claim.room.utf8.count == 128)
        let bytes = claim.encoded(key: Self.keys.claimKey)
        #expect(bytes.count <= SiblingClaim.maxBytes)
        #expect(try SiblingClaim.decode(bytes, keys: Self.keys).get() == claim)
    }

    static let nameAt = 42

    static let encoded = kitchen.encoded(key: keys.claimKey)

    static let refusals: [([UInt8], ClaimRefusal)] = [
        ([], .malformed),
        (Array("PSC".utf8), .malformed),
        (Array("PSC\u{1}".utf8), .malformed),
        (changed(0, to: UInt8(ascii: "X"), retag: false), .malformed),
        (changed(3, to: 2, retag: false), .unknownVersion),
        (changed(3, to: 0, retag: false), .unknownVersion),
        (Array(encoded.dropLast()), .malformed),
        (Array(encoded.dropLast(33)), .malformed),
        (retagged(Array(encoded.dropLast(32)) + [0] + [UInt8](repeating: 0, count: 32)), .malformed),
        (changed(38, to: 0x27), .malformed),  // probability 10000 + 256
        (changed(nameAt, to: 0), .malformed),  // an empty name: the rest no longer lines up
        (changed(nameAt, to: 200), .malformed),  // a length past the end
        (changed(nameAt + 1, to: 0x07), .malformed),  // a control character in the name
        (changed(nameAt + 1, to: 0xFF), .malformed),  // not UTF-8
        (changed(4, to: 0x00), .wrongHouse),
        (changed(4, to: 0x00, retag: false), .wrongHouse),
        (changed(36, to: 0x7F, retag: false), .forged),  // louder than heard
        (changed(20, to: 0xEE, retag: false), .forged),
        (changed(encoded.count - 1, to: 0, retag: false), .forged),
        (SiblingClaim(house: keys.house, session: 1, sequence: 1, levelDb: 0, probability: 1, ageMs: 0, name: "x", room: "")
            .encoded(key: HouseKeys(token: "another-token").claimKey), .forged),
        (encoded + [UInt8](repeating: 0, count: 513 - encoded.count), .oversized),
        ([UInt8](repeating: 0, count: 65_536), .oversized),
    ]

    @Test("anything but a well-formed claim of this house, tagged with its key, is refused with its reason",
          arguments: refusals)
    func refused(datagram: [UInt8], reason: ClaimRefusal) {
        #expect(SiblingClaim.decode(datagram, keys: Self.keys) == .failure(reason))
    }

    @Test("a claim that carries an empty name is refused even when tagged")
    func emptyName() {
        var claim = Self.kitchen
        claim.name = ""
        #expect(SiblingClaim.decode(claim.encoded(key: Self.keys.claimKey), keys: Self.keys) == .failure(.malformed))
    }

    @Test("a claim never carries the token")
    func noToken() {
        let token = "test-token"
        let bytes = Self.kitchen.encoded(key: Self.keys.claimKey)
        let text = Array(token.utf8)
        #expect(!(0...(bytes.count - text.count)).contains { Array(bytes[$0..<$0 + text.count]) == text })
    }

    @Test("no bit of a claim can be changed without its refusal", arguments: [0, 1, 2, 3, 4, 5, 6, 7])
    func everyBit(bit: Int) {
        let bytes = Self.kitchen.encoded(key: Self.keys.claimKey)
        for at in bytes.indices {
            var changed = bytes
            changed[at] ^= 1 << bit
            if case .success = SiblingClaim.decode(changed, keys: Self.keys) { Issue.record("byte \(at) bit \(bit) passed") }
        }
    }
}
