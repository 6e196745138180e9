import Testing
@testable import SatelliteCore

@Suite("house keys derived from the token")
struct HouseKeysTests {
    // Python's hmac.new(b"test-token", label, sha256) of each label.
    @Test("the house identifier and the claim key are HMAC-SHA256 of their labels under the token")
    func derived() {
        let keys = HouseKeys(token: "test-token")
        #expect(keys.houseText == "98b8b4eefeb1b1417e3fdf5e4118b393")
        #expect(HouseKeys.hex(keys.claimKey) == "ff340f453a8635b81cf47a9884ac47db07cc5d153cc1b53f8c38d3d135b5e52b")
    }

    @Test("another token is another house, and neither value holds the token or each other")
    func distinct() {
        let keys = HouseKeys(token: "test-token")
        let other = HouseKeys(token: "test-tokeN")
        #expect(keys.house != other.house)
        #expect(keys.claimKey != other.claimKey)
        #expect(Array(keys.claimKey.prefix(16)) != keys.house)
        #expect(!keys.houseText.contains("test-token"))
        #expect(keys.house.count == 16 && keys.claimKey.count == 32)
    }
}
