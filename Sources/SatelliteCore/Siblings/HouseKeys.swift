// What satellites of one house derive from the house's token to find and trust
// each other: a house identifier they advertise on Bonjour, and the key that
// authenticates their claims. Each is HMAC-SHA256 of its own label under the
// token, so neither reveals the token nor the other, and the token itself never
// leaves for anywhere but the pinned server.

public struct HouseKeys: Sendable, Equatable {
    /// 16 bytes; its hex is the `house` entry of the `_parlour-satellite._udp` TXT record.
    public let house: [UInt8]
    /// 32 bytes: the HMAC-SHA256 key of every claim (SiblingClaim).
    public let claimKey: [UInt8]

    static let houseLabel = Array("parlour-satellite house v1".utf8)
    static let claimKeyLabel = Array("parlour-satellite claim key v1".utf8)

    public init(token: String) {
        let secret = Array(token.utf8)
        house = Array(SHA256.hmac(key: secret, Self.houseLabel).prefix(16))
        claimKey = SHA256.hmac(key: secret, Self.claimKeyLabel)
    }

    /// The house identifier as the TXT record holds it: 32 lower-case hex digits.
    public var houseText: String { Self.hex(house) }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]] }
        return String(decoding: text, as: UTF8.self)
    }
}
