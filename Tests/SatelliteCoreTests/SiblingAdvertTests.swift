import Testing
@testable import SatelliteCore

@Suite("a sibling's Bonjour record, written and read")
struct SiblingAdvertTests {
    static let keys = HouseKeys(token: "test-token")
    static let hex = HouseKeys.hex(keys.house)

    @Test("what a satellite writes reads back as it was")
    func roundTrip() {
        let advert = SiblingAdvert(name: "kitchen-pi", house: Self.keys.house, room: "Kitchen")
        #expect(advert.txt == ["house=\(Self.hex)", "room=Kitchen", "version=1"])
        #expect(SiblingAdvert.decode(name: "kitchen-pi", txt: DiscoveredServer.txtRecord(advert.txt)) == advert)
    }

    @Test("a long room is cut at a character to 128 bytes, as a claim's is, and still reads")
    func longRoom() {
        let advert = SiblingAdvert(name: "pi", house: Self.keys.house, room: String(repeating: "é", count: 100))
        #expect(advert.room.utf8.count == 128)
        #expect(SiblingAdvert.decode(name: "pi", txt: DiscoveredServer.txtRecord(advert.txt)) == advert)
    }

    static let wellFormed: [(txt: [String: String], room: String)] = [
        (["house": hex, "room": "hall", "version": "1"], "hall"),
        (["house": hex.uppercased(), "room": "hall", "version": "1"], "hall"),
        (["house": hex, "version": "1"], ""),
        (["house": hex, "room": "", "version": "1", "extra": "x"], ""),
        (["house": hex, "room": "Salle à manger", "version": "1"], "Salle à manger"),
    ]

    @Test("a record is read", arguments: wellFormed)
    func read(txt: [String: String], room: String) {
        #expect(SiblingAdvert.decode(name: "hall-pi", txt: txt) == SiblingAdvert(name: "hall-pi", house: Self.keys.house, room: room))
    }

    /// Records no satellite writes: each is refused.
    static let malformed: [(name: String, txt: [String: String])] = [
        ("pi", ["room": "hall", "version": "1"]),                                          // no house
        ("pi", ["house": "", "version": "1"]),                                             // empty house
        ("pi", ["house": String(hex.dropLast()), "version": "1"]),                         // 31 digits
        ("pi", ["house": hex + "0", "version": "1"]),                                      // 33 digits
        ("pi", ["house": String(hex.dropLast()) + "g", "version": "1"]),                   // not hex
        ("pi", ["house": String(hex.dropLast(2)) + "é", "version": "1"]),                  // 32 bytes, not 32 digits
        ("pi", ["house": "0x" + String(hex.dropLast(2)), "version": "1"]),                 // a prefix
        ("pi", ["house": hex]),                                                            // no version
        ("pi", ["house": hex, "version": "2"]),                                            // another version
        ("pi", ["house": hex, "version": "1.0"]),
        ("", ["house": hex, "version": "1"]),                                              // no name
        ("pi\n", ["house": hex, "version": "1"]),                                          // a control character
        (String(repeating: "n", count: 129), ["house": hex, "version": "1"]),              // a name too long
        ("pi", ["house": hex, "room": String(repeating: "r", count: 129), "version": "1"]), // a room too long
        ("pi", ["house": hex, "room": "hall\u{7}", "version": "1"]),
        ("pi", ["house": hex, "room": "hall\u{FFFD}", "version": "1"]),                    // bytes that were not UTF-8
    ]

    @Test("a record that is not what a satellite writes is no sibling, never a crash", arguments: malformed)
    func refused(name: String, txt: [String: String]) {
        #expect(SiblingAdvert.decode(name: name, txt: txt) == nil)
    }

    @Test("another token is another house")
    func otherHouse() throws {
        let other = HouseKeys(token: "other-token")
        let advert = try #require(SiblingAdvert.decode(name: "pi", txt: DiscoveredServer.txtRecord(
            SiblingAdvert(name: "pi", house: other.house, room: "").txt)))
        #expect(advert.house != Self.keys.house)
    }
}
