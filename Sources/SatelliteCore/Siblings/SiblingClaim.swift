// The datagram a satellite sends its siblings when it hears the wake word: how
// loudly it heard it, so that the loudest alone answers (Arbitration). Binary,
// big-endian, at most `maxBytes`:
//
//   "PSC" version(1) house(16) session(8) sequence(8) level(i16, 0.01 dB)
//   probability(u16, 1/10000) age(u16, ms) nameLength(1) name roomLength(1) room
//   tag(32): HMAC-SHA256 under HouseKeys.claimKey of every byte before it
//
// `session` is random for each start of the sender and `sequence` counts its
// wakes from 1: the pair names the wake and is what SiblingClaims refuses to
// see twice. `age` is the time from the wake to sending, so the receiver places
// the wake on its own clock with no wall time shared. The decoder is pure and
// refuses anything else with a reason, never a crash; it is fuzzed
// (Fuzz/sibling-claim.swift).

public struct SiblingClaim: Sendable, Equatable {
    public static let version: UInt8 = 1
    /// The largest datagram read; anything longer is refused unread.
    public static let maxBytes = 512
    /// The longest name and room a claim carries, in UTF-8 bytes; longer ones are cut at a character.
    public static let maxTextBytes = 128
    static let magic: [UInt8] = Array("PSC".utf8)
    static let tagBytes = 32

    public var house: [UInt8]
    /// Random for each start of the sender.
    public var session: UInt64
    /// The sender's wakes, counted from 1 within its session.
    public var sequence: UInt64
    /// The sender's level of the wake word after processing, with its levelOffsetDb added, in hundredths of a dB.
    public var levelCentiDb: Int16
    /// The detector's probability, in ten-thousandths (0 to 10000).
    public var probability: UInt16
    /// Milliseconds from the wake to sending.
    public var ageMs: UInt16
    public var name: String
    public var room: String

    public init(house: [UInt8], session: UInt64, sequence: UInt64, levelDb: Double, probability: Double,
                ageMs: Int, name: String, room: String) {
        self.house = house
        self.session = session
        self.sequence = sequence
        let centi = (levelDb.isNaN ? -32_768 : levelDb * 100).rounded()
        levelCentiDb = Int16(min(max(centi, -32_768), 32_767))
        let ppm = (probability.isNaN ? 0 : probability * 10_000).rounded()
        self.probability = UInt16(min(max(ppm, 0), 10_000))
        self.ageMs = UInt16(min(max(ageMs, 0), Int(UInt16.max)))
        self.name = Self.cut(name)
        self.room = Self.cut(room)
    }

    public var levelDb: Double { Double(levelCentiDb) / 100 }

    /// `text` cut to at most `maxTextBytes` of UTF-8, at a character's end.
    static func cut(_ text: String) -> String {
        guard text.utf8.count > maxTextBytes else { return text }
        var kept = ""
        for character in text {
            if kept.utf8.count + String(character).utf8.count > maxTextBytes { break }
            kept.append(character)
        }
        return kept
    }

    /// The datagram, tagged with `key`.
    public func encoded(key: [UInt8]) -> [UInt8] {
        var bytes = Self.magic + [Self.version] + house
        Self.append(session, to: &bytes)
        Self.append(sequence, to: &bytes)
        Self.append(UInt64(UInt16(bitPattern: levelCentiDb)), bytes: 2, to: &bytes)
        Self.append(UInt64(probability), bytes: 2, to: &bytes)
        Self.append(UInt64(ageMs), bytes: 2, to: &bytes)
        for text in [name, room] {
            bytes.append(UInt8(text.utf8.count))
            bytes += Array(text.utf8)
        }
        return bytes + SHA256.hmac(key: key, bytes)
    }

    private static func append(_ value: UInt64, bytes count: Int = 8, to bytes: inout [UInt8]) {
        for i in (0..<count).reversed() { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(i * 8))) }
    }

    /// The claim in `datagram`, when it is well formed, of `keys`' house and tagged with its key.
    public static func decode(_ datagram: [UInt8], keys: HouseKeys) -> Result<SiblingClaim, ClaimRefusal> {
        if datagram.count > maxBytes { return .failure(.oversized) }
        var reader = Reader(bytes: datagram)
        guard reader.take(3) == magic, let version = reader.byte() else { return .failure(.malformed) }
        guard version == Self.version else { return .failure(.unknownVersion) }
        guard datagram.count > tagBytes else { return .failure(.malformed) }
        reader.end = datagram.count - tagBytes
        guard let house = reader.take(16), let session = reader.number(8), let sequence = reader.number(8),
              let level = reader.number(2), let probability = reader.number(2), let age = reader.number(2),
              let name = reader.text(), let room = reader.text(), reader.at == reader.end
        else { return .failure(.malformed) }
        guard probability <= 10_000, !name.isEmpty else { return .failure(.malformed) }
        guard house == keys.house else { return .failure(.wrongHouse) }
        let signed = Array(datagram[..<reader.end])
        guard SHA256.equal(SHA256.hmac(key: keys.claimKey, signed), Array(datagram[reader.end...])) else {
            return .failure(.forged)
        }
        var claim = SiblingClaim(house: house, session: session, sequence: sequence, levelDb: 0, probability: 0,
                                 ageMs: 0, name: name, room: room)
        claim.levelCentiDb = Int16(bitPattern: UInt16(level))
        claim.probability = UInt16(probability)
        claim.ageMs = UInt16(age)
        return .success(claim)
    }

    /// Reads fields in order up to `end`; nil past it.
    private struct Reader {
        let bytes: [UInt8]
        var at = 0
        var end: Int

        init(bytes: [UInt8]) {
            self.bytes = bytes
            end = bytes.count
        }

        mutating func take(_ count: Int) -> [UInt8]? {
            guard count <= end - at else { return nil }
            defer { at += count }
            return Array(bytes[at..<at + count])
        }

        mutating func byte() -> UInt8? { take(1)?.first }

        mutating func number(_ count: Int) -> UInt64? {
            take(count)?.reduce(0) { $0 << 8 | UInt64($1) }
        }

        /// A length byte and that many bytes of valid UTF-8 with no control characters.
        mutating func text() -> String? {
            guard let length = byte(), Int(length) <= SiblingClaim.maxTextBytes, let raw = take(Int(length)),
                  let text = String(validating: raw, as: UTF8.self),
                  !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else { return nil }
            return text
        }
    }
}

/// Why a datagram was not taken as a sibling's claim; each is counted, none is answered.
public enum ClaimRefusal: String, Error, Sendable, Equatable, CaseIterable {
    /// Longer than SiblingClaim.maxBytes.
    case oversized
    /// Not a claim: wrong magic, cut short, bytes left over, a field out of range.
    case malformed
    /// A claim of a version this satellite does not speak.
    case unknownVersion
    /// Another house's claim (another token).
    case wrongHouse
    /// This house's identifier with a tag its key did not make.
    case forged
    /// A wake this sibling already claimed, or one older than what it has claimed since.
    case replayed
    /// A claim whose wake lies too far before its arrival.
    case stale
    /// Another copy, come at once, of the claim just taken (sent to each of this satellite's
    /// addresses): dropped, and not counted as refused.
    case duplicate
}
