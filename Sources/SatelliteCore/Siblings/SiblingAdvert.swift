// What a satellite says of itself on Bonjour, in the TXT record of its
// `_parlour-satellite._udp` service, and the reading of a neighbour's. Anything
// on the network can advertise this type, so a record is read as untrusted:
// one that is not exactly what a satellite writes is not a sibling.

/// A `_parlour-satellite._udp` record's instance name and TXT entries.
public struct SiblingAdvert: Sendable, Equatable {
    public static let serviceType = "_parlour-satellite._udp"
    /// The TXT `version` this satellite writes and reads; a record of another version claims in a form it cannot read.
    public static let version = "1"

    /// The Bonjour instance name: the name a sibling claims under.
    public var name: String
    /// The house identifier (HouseKeys.house), 16 bytes.
    public var house: [UInt8]
    /// The room, at most `SiblingClaim.maxTextBytes` of UTF-8 ("" when none).
    public var room: String

    /// `room` is cut as a claim cuts it, so the record and the claims say the same.
    public init(name: String, house: [UInt8], room: String) {
        self.name = name
        self.house = house
        self.room = SiblingClaim.cut(room)
    }

    /// The TXT record's strings, as advertised.
    public var txt: [String] {
        ["house=\(HouseKeys.hex(house))", "room=\(room)", "version=\(Self.version)"]
    }

    /// A neighbour's record, from its instance name and TXT entries (keys in lower case, as
    /// `DiscoveredServer.txtRecord` gives them). Nil unless `version` is 1, `house` is 32 hex
    /// digits, and the name (1 to 128 bytes) and the room (at most 128) hold no control characters.
    public static func decode(name: String, txt: [String: String]) -> SiblingAdvert? {
        guard txt["version"] == version, let house = txt["house"].flatMap(Self.bytes(hex:)),
              isText(name, allowingEmpty: false), isText(txt["room"] ?? "", allowingEmpty: true)
        else { return nil }
        return SiblingAdvert(name: name, house: house, room: txt["room"] ?? "")
    }

    /// 32 hex digits (either case) as 16 bytes; nil for anything else.
    static func bytes(hex text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count == 32 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 32, by: 2) {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func isText(_ text: String, allowingEmpty: Bool) -> Bool {
        (allowingEmpty || !text.isEmpty) && text.utf8.count <= SiblingClaim.maxTextBytes
            && !text.unicodeScalars.contains { $0.properties.generalCategory == .control || $0 == "\u{FFFD}" }
    }
}
