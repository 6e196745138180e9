import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

/// Writes WAV files byte by byte, so a test can make right ones and wrong ones.
enum WAVBytes {
    static func le16(_ value: Int) -> [UInt8] { withUnsafeBytes(of: UInt16(truncatingIfNeeded: value).littleEndian, Array.init) }
    static func le32(_ value: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(truncatingIfNeeded: value).littleEndian, Array.init) }
    static func le64(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }

    /// A chunk with its pad byte; `size` overrides the declared size.
    static func chunk(_ id: String, _ body: [UInt8], size: Int? = nil) -> [UInt8] {
        Array(id.utf8) + le32(size ?? body.count) + body + (body.count % 2 == 1 ? [0] : [])
    }

    /// A `fmt ` body; `subformat` makes it WAVE_FORMAT_EXTENSIBLE with that GUID.
    static func format(tag: Int = 1, channels: Int = 1, rate: Int = 16_000, bits: Int = 16,
                       blockAlign: Int? = nil, subformat: [UInt8]? = nil) -> [UInt8] {
        let align = blockAlign ?? channels * bits / 8
        var body = le16(subformat == nil ? tag : 0xFFFE) + le16(channels) + le32(rate) + le32(rate * align)
            + le16(align) + le16(bits)
        if let subformat { body += le16(22) + le16(bits) + le32(0) + subformat }
        return body
    }

    /// The GUID of a classic format tag inside WAVE_FORMAT_EXTENSIBLE.
    static func guid(tag: Int) -> [UInt8] { le32(tag) + WAV.subformatTail }

    static func riff(_ chunks: [UInt8]..., size: Int? = nil) -> [UInt8] {
        let body = chunks.flatMap { $0 }
        return Array("RIFF".utf8) + le32(size ?? body.count + 4) + Array("WAVE".utf8) + body
    }

    /// A plain 16 kHz mono 16-bit file of `samples`.
    static func pcm16(_ samples: [Int16], dataSize: Int? = nil) -> [UInt8] {
        riff(chunk("fmt ", format()), chunk("data", samples.flatMap { le16(Int($0)) }, size: dataSize))
    }
}

@Suite("WAV codec")
struct WAVTests {
    /// An encoding, sample values written in it, and the 16-bit values they must decode to.
    struct Layout: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var tag: Int
        var extensible: Bool
        var bits: Int
        var written: [[UInt8]]
        var expected: [Int16]
    }

    static let floats: [Double] = [-1, 0, 1, 0.5, -2, 2, 3.0 / 32768, -0.25, 1.5 / 32768, -1.5 / 32768, .nan, .infinity]
    static let floatsExpected: [Int16] = [-32768, 0, 32767, 16384, -32768, 32767, 3, -8192, 2, -2, 0, 32767]
    static let pcm16Values: [Int16] = [-32768, 0, 32767, -1, 1000, -1000]
    static let pcm24Values = [-8_388_608, 0, 8_388_607, 384, 127, 128]
    static let pcm24Expected: [Int16] = [-32768, 0, 32767, 2, 0, 1]

    static let layouts: [Layout] = [
        Layout(testDescription: "8-bit unsigned", tag: 1, extensible: false, bits: 8,
               written: [0, 128, 255, 64, 192, 127].map { [$0] }, expected: [-32768, 0, 32512, -16384, 16384, -256]),
        Layout(testDescription: "16-bit", tag: 1, extensible: false, bits: 16,
               written: pcm16Values.map { WAVBytes.le16(Int($0)) }, expected: pcm16Values),
        Layout(testDescription: "24-bit", tag: 1, extensible: false, bits: 24,
               written: pcm24Values.map { Array(WAVBytes.le32($0).prefix(3)) }, expected: pcm24Expected),
        Layout(testDescription: "32-bit", tag: 1, extensible: false, bits: 32,
               written: [Int(Int32.min), 0, Int(Int32.max), 0x18000, -0x8000, -0x8001].map { WAVBytes.le32($0) },
               expected: [-32768, 0, 32767, 2, 0, -1]),
        Layout(testDescription: "32-bit float", tag: 3, extensible: false, bits: 32,
               written: floats.map { WAVBytes.le32(Int(Float($0).bitPattern)) }, expected: floatsExpected),
        Layout(testDescription: "64-bit float", tag: 3, extensible: false, bits: 64,
               written: floats.map { WAVBytes.le64($0.bitPattern) }, expected: floatsExpected),
        Layout(testDescription: "extensible 16-bit", tag: 1, extensible: true, bits: 16,
               written: pcm16Values.map { WAVBytes.le16(Int($0)) }, expected: pcm16Values),
        Layout(testDescription: "extensible 24-bit", tag: 1, extensible: true, bits: 24,
               written: pcm24Values.map { Array(WAVBytes.le32($0).prefix(3)) }, expected: pcm24Expected),
        Layout(testDescription: "extensible 32-bit float", tag: 3, extensible: true, bits: 32,
               written: floats.map { WAVBytes.le32(Int(Float($0).bitPattern)) }, expected: floatsExpected),
    ]

    static let shapes: [(rate: Int, channels: Int)] = [
        (8_000, 1), (16_000, 1), (22_050, 2), (24_000, 1), (44_100, 2), (48_000, 2), (192_000, 8),
    ]

    @Test("every common layout decodes to the expected 16-bit samples", arguments: layouts, shapes)
    func decodesLayout(_ layout: Layout, shape: (rate: Int, channels: Int)) throws {
        // Repeated once per channel, so the samples always make whole frames.
        let written = Array(repeating: layout.written.flatMap { $0 }, count: shape.channels).flatMap { $0 }
        let expected = Array(repeating: layout.expected, count: shape.channels).flatMap { $0 }
        let format = WAVBytes.format(tag: layout.tag, channels: shape.channels, rate: shape.rate, bits: layout.bits,
                                     subformat: layout.extensible ? WAVBytes.guid(tag: layout.tag) : nil)
        let audio = try WAV.decode(WAVBytes.riff(WAVBytes.chunk("fmt ", format), WAVBytes.chunk("data", written)))
        #expect(audio == PCMAudio(sampleRate: shape.rate, channels: shape.channels, samples: expected))
    }

    static let samples: [Int16] = [0, 1, -1, 32767, -32768, 1234]

    @Test("the chunks around fmt and data are walked past", arguments: [
        ("LIST before fmt", WAVBytes.riff(WAVBytes.chunk("LIST", Array("INFOISFT".utf8)), WAVBytes.chunk("fmt ", WAVBytes.format()),
                                          WAVBytes.chunk("data", samples.flatMap { WAVBytes.le16(Int($0)) }))),
        ("an odd chunk and its pad byte", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format()), WAVBytes.chunk("junk", [1, 2, 3]),
                                                        WAVBytes.chunk("data", samples.flatMap { WAVBytes.le16(Int($0)) }))),
        ("fact between fmt and data", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format()), WAVBytes.chunk("fact", WAVBytes.le32(6)),
                                                    WAVBytes.chunk("data", samples.flatMap { WAVBytes.le16(Int($0)) }))),
        ("a chunk after data", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format()),
                                             WAVBytes.chunk("data", samples.flatMap { WAVBytes.le16(Int($0)) }),
                                             WAVBytes.chunk("LIST", [9, 9, 9, 9]))),
        ("an 18-byte fmt with cbSize", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format() + [0, 0]),
                                                     WAVBytes.chunk("data", samples.flatMap { WAVBytes.le16(Int($0)) }))),
        ("an odd-sized fmt", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format() + [7]),
                                           WAVBytes.chunk("data", samples.flatMap { WAVBytes.le16(Int($0)) }))),
        ("streaming data size 0", WAVBytes.pcm16(samples, dataSize: 0)),
        ("streaming data size 0xFFFFFFFF", WAVBytes.pcm16(samples, dataSize: 0xFFFF_FFFF)),
        ("RIFF size 0", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format()),
                                      WAVBytes.chunk("data", samples.flatMap { WAVBytes.le16(Int($0)) }), size: 0)),
        ("RIFF size larger than the file", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format()),
                                                         WAVBytes.chunk("data", samples.flatMap { WAVBytes.le16(Int($0)) }),
                                                         size: 0xFFFF_FFFF)),
    ])
    func chunkWalk(_ name: String, _ file: [UInt8]) throws {
        #expect(try WAV.decode(file) == PCMAudio(sampleRate: 16_000, channels: 1, samples: Self.samples))
    }

    @Test("an odd-sized 8-bit data chunk keeps its samples and ignores its pad byte")
    func oddData() throws {
        let file = WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(bits: 8)), WAVBytes.chunk("data", [128, 255, 0]))
        #expect(try WAV.decode(file).samples == [0, 32512, -32768])
    }

    static let unknownGUID: [UInt8] = [0x2C, 0x80, 0x6D, 0xE0, 0x46, 0xDB, 0xCF, 0x11, 0xB4, 0xD1, 0x00, 0x80, 0x5F, 0x6C, 0xBB, 0xEA]

    @Test("malformed files are errors that say what is wrong", arguments: [
        ("empty", [UInt8](), WAVError.notWAV),
        ("11 bytes", Array("RIFF\0\0\0\0WAV".utf8), .notWAV),
        ("big-endian RIFX", Array("RIFX\u{24}\0\0\0WAVEfmt ".utf8), .notWAV),
        ("an AVI", Array("RIFF\u{24}\0\0\0AVI LIST".utf8), .notWAV),
        ("text", Array("this is not audio at all, it is an error page".utf8), .notWAV),
        ("only a header", WAVBytes.riff(), .missingData),
        ("no data chunk", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format())), .missingData),
        ("data before fmt", WAVBytes.riff(WAVBytes.chunk("data", [0, 0]), WAVBytes.chunk("fmt ", WAVBytes.format())), .missingFormat),
        ("no fmt chunk", WAVBytes.riff(WAVBytes.chunk("LIST", [1, 2]), WAVBytes.chunk("data", [0, 0])), .missingFormat),
        ("a 14-byte fmt", WAVBytes.riff(WAVBytes.chunk("fmt ", Array(WAVBytes.format().prefix(14))), WAVBytes.chunk("data", [0, 0])),
         .formatTooShort(bytes: 14, needed: 16)),
        ("an extensible fmt without its extension",
         WAVBytes.riff(WAVBytes.chunk("fmt ", Array(WAVBytes.format(subformat: WAVBytes.guid(tag: 1)).prefix(18))),
                       WAVBytes.chunk("data", [0, 0])),
         .formatTooShort(bytes: 18, needed: 40)),
        ("an extensible fmt with an unknown subformat",
         WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(subformat: unknownGUID)), WAVBytes.chunk("data", [0, 0])),
         .unsupportedEncoding("WAVE_FORMAT_EXTENSIBLE with subformat {E06D802C-DB46-11CF-B4D1-00805F6CBBEA}")),
        ("an extensible fmt holding A-law",
         WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(bits: 8, subformat: WAVBytes.guid(tag: 6))), WAVBytes.chunk("data", [0])),
         .unsupportedEncoding("A-law")),
        ("A-law", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(tag: 6, bits: 8)), WAVBytes.chunk("data", [0])),
         .unsupportedEncoding("A-law")),
        ("MP3", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(tag: 0x55)), WAVBytes.chunk("data", [0, 0])),
         .unsupportedEncoding("MP3")),
        ("an unknown format tag", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(tag: 0x1234)), WAVBytes.chunk("data", [0, 0])),
         .unsupportedEncoding("format tag 0x1234")),
        ("12-bit PCM", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(bits: 12, blockAlign: 2)), WAVBytes.chunk("data", [0, 0])),
         .unsupportedEncoding("12-bit PCM")),
        ("0-bit PCM", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(bits: 0, blockAlign: 2)), WAVBytes.chunk("data", [0, 0])),
         .unsupportedEncoding("0-bit PCM")),
        ("16-bit float", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(tag: 3, bits: 16)), WAVBytes.chunk("data", [0, 0])),
         .unsupportedEncoding("16-bit float")),
        ("0 channels", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(channels: 0, blockAlign: 2)), WAVBytes.chunk("data", [0, 0])),
         .unsupportedChannelCount(0)),
        ("9 channels", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(channels: 9)), WAVBytes.chunk("data", [0, 0])),
         .unsupportedChannelCount(9)),
        ("rate 0", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(rate: 0)), WAVBytes.chunk("data", [0, 0])),
         .unsupportedSampleRate(0)),
        ("rate 7999", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(rate: 7_999)), WAVBytes.chunk("data", [0, 0])),
         .unsupportedSampleRate(7_999)),
        ("rate 192001", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(rate: 192_001)), WAVBytes.chunk("data", [0, 0])),
         .unsupportedSampleRate(192_001)),
        ("rate 0xFFFFFFFF", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(rate: 0xFFFF_FFFF)), WAVBytes.chunk("data", [0, 0])),
         .unsupportedSampleRate(0xFFFF_FFFF)),
        ("block align 0", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(blockAlign: 0)), WAVBytes.chunk("data", [0, 0])),
         .inconsistentBlockAlign(blockAlign: 0, expected: 2)),
        ("block align 4 for mono 16-bit", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(blockAlign: 4)), WAVBytes.chunk("data", [0, 0, 0, 0])),
         .inconsistentBlockAlign(blockAlign: 4, expected: 2)),
        ("data size 0x7FFFFFFF", WAVBytes.pcm16([1, 2, 3], dataSize: 0x7FFF_FFFF),
         .truncated(chunk: "data", declared: 0x7FFF_FFFF, present: 6)),
        ("data one byte longer than the file", WAVBytes.pcm16([1, 2, 3], dataSize: 7), .truncated(chunk: "data", declared: 7, present: 6)),
        ("LIST size past the end", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format()), WAVBytes.chunk("LIST", [1, 2], size: 100)),
         .truncated(chunk: "LIST", declared: 100, present: 2)),
        ("fmt size 0xFFFFFFFF", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(), size: 0xFFFF_FFFF), WAVBytes.chunk("data", [0, 0])),
         .truncated(chunk: "fmt", declared: 0xFFFF_FFFF, present: 26)),
        ("an unprintable chunk id past the end", WAVBytes.riff([0, 1, 0xFF, 0x41] + WAVBytes.le32(9)),
         .truncated(chunk: "???A", declared: 9, present: 0)),
        ("an odd byte count in 16-bit data", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format()), WAVBytes.chunk("data", [1, 2, 3])),
         .partialFrame(bytes: 3, blockAlign: 2)),
        ("half a stereo frame", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(channels: 2)), WAVBytes.chunk("data", [1, 2, 3, 4, 5, 6])),
         .partialFrame(bytes: 6, blockAlign: 4)),
        ("a streaming data chunk cut mid-frame",
         WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(channels: 2)), WAVBytes.chunk("data", [1, 2, 3, 4, 5, 6], size: 0)),
         .partialFrame(bytes: 6, blockAlign: 4)),
        ("an empty data chunk", WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format()), WAVBytes.chunk("data", [])), .noFrames),
    ])
    func malformed(_ name: String, _ file: [UInt8], _ expected: WAVError) {
        #expect(throws: expected) { try WAV.decode(file) }
    }

    @Test("every error is a sentence that names the problem", arguments: [
        (WAVError.notWAV, "not a WAV file"),
        (.missingFormat, "before any fmt chunk"),
        (.missingData, "no data chunk"),
        (.formatTooShort(bytes: 14, needed: 16), "fmt chunk is 14 bytes long"),
        (.truncated(chunk: "data", declared: 100, present: 6), "cut short: its data chunk declares 100 bytes but only 6"),
        (.unsupportedEncoding("A-law"), "encoded as A-law"),
        (.unsupportedChannelCount(0), "has 0 channels"),
        (.unsupportedSampleRate(4_000), "4000 Hz"),
        (.inconsistentBlockAlign(blockAlign: 0, expected: 2), "block align is 0 bytes"),
        (.partialFrame(bytes: 3, blockAlign: 2), "3 bytes, which is not a whole number of 2-byte frames"),
        (.noFrames, "data chunk is empty"),
    ])
    func descriptions(_ error: WAVError, _ phrase: String) {
        #expect(error.description.hasPrefix("The "))
        #expect(error.description.hasSuffix("."))
        #expect(error.description.contains(phrase))
    }

    @Test("every shorter prefix of a file is an error, never a crash")
    func prefixes() throws {
        let file = WAVBytes.riff(WAVBytes.chunk("LIST", [1, 2, 3]), WAVBytes.chunk("fmt ", WAVBytes.format(channels: 2)),
                                 WAVBytes.chunk("data", Self.samples.flatMap { WAVBytes.le16(Int($0)) }))
        #expect(try WAV.decode(file).samples == Self.samples)
        for length in 0..<file.count {
            #expect(throws: WAVError.self, "prefix of \(length) bytes") { try WAV.decode(Array(file.prefix(length))) }
        }
    }

    @Test("every prefix of a streaming file decodes its whole frames or is an error")
    func streamingPrefixes() throws {
        let file = WAVBytes.pcm16(Self.samples, dataSize: 0xFFFF_FFFF)
        for length in 0...file.count {
            let prefix = Array(file.prefix(length))
            let dataBytes = length - 44
            if dataBytes > 0, dataBytes % 2 == 0 {
                #expect(try WAV.decode(prefix).samples == Array(Self.samples.prefix(dataBytes / 2)))
            } else {
                #expect(throws: WAVError.self, "prefix of \(length) bytes") { try WAV.decode(prefix) }
            }
        }
    }

    @Test("random mutations of valid files never trap")
    func mutations() {
        let seeds: [[UInt8]] = [
            WAVBytes.pcm16(Self.samples),
            WAVBytes.riff(WAVBytes.chunk("LIST", [1, 2, 3]),
                          WAVBytes.chunk("fmt ", WAVBytes.format(tag: 3, channels: 2, rate: 24_000, bits: 32, subformat: WAVBytes.guid(tag: 3))),
                          WAVBytes.chunk("fact", WAVBytes.le32(2)),
                          WAVBytes.chunk("data", Self.floats.prefix(4).flatMap { WAVBytes.le32(Int(Float($0).bitPattern)) })),
            WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(bits: 24)), WAVBytes.chunk("data", Self.pcm24Values.flatMap { WAVBytes.le32($0).prefix(3) })),
        ]
        let interesting: [UInt32] = [0, 1, 2, 3, 0xFFFE, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFE, 0xFFFF_FFFF]
        var generator = SeededGenerator(seed: 0x5EED)
        var decoded = 0
        var refused = 0
        for _ in 0..<2_000 {
            var bytes = [UInt8](seeds[Int.random(in: 0..<seeds.count, using: &generator)])
            for _ in 0..<Int.random(in: 1...4, using: &generator) where !bytes.isEmpty {
                let at = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<5, using: &generator) {
                case 0:
                    bytes[at] = UInt8.random(in: 0...255, using: &generator)
                case 1:
                    let word = withUnsafeBytes(of: interesting[Int.random(in: 0..<interesting.count, using: &generator)].littleEndian, Array.init)
                    for (index, byte) in word.enumerated() where at + index < bytes.count { bytes[at + index] = byte }
                case 2:
                    bytes.removeSubrange(at...)
                case 3:
                    bytes.insert(contentsOf: (0..<Int.random(in: 1...9, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }, at: at)
                default:
                    bytes.removeSubrange(at..<min(bytes.count, at + Int.random(in: 1...4, using: &generator)))
                }
            }
            do {
                let audio = try WAV.decode(Array(bytes))
                decoded += 1
                #expect((1...8).contains(audio.channels))
                #expect((8_000...192_000).contains(audio.sampleRate))
                #expect(!audio.samples.isEmpty && audio.samples.count % audio.channels == 0)
            } catch {
                refused += 1
            }
        }
        // Both outcomes happen, so the loop exercised the decoder and the refusals.
        #expect(decoded > 50)
        #expect(refused > 100)
    }

    @Test("three megabytes of float32 decode in one pass")
    func largeFloat() throws {
        let count = 786_432
        let written = (0..<count).flatMap { WAVBytes.le32(Int(Float(Double($0 % 200 - 100) / 100).bitPattern)) }
        let file = WAVBytes.riff(WAVBytes.chunk("fmt ", WAVBytes.format(tag: 3, rate: 24_000, bits: 32)), WAVBytes.chunk("data", written))
        #expect(file.count > 3_000_000)
        let audio = try WAV.decode(file)
        #expect(audio.samples.count == count)
        #expect(audio.samples[0] == -32768)
        #expect(audio.samples[150] == 16384)
        #expect(audio.duration == .milliseconds(32_768))
    }

    @Test("encoding writes the canonical 44-byte PCM16 header")
    func header() {
        let data = WAV.encode(PCMAudio(sampleRate: 16_000, channels: 1, samples: [1, -2]))
        let expected: [UInt8] = Array("RIFF".utf8) + WAVBytes.le32(40) + Array("WAVE".utf8)
            + Array("fmt ".utf8) + WAVBytes.le32(16) + WAVBytes.le16(1) + WAVBytes.le16(1) + WAVBytes.le32(16_000)
            + WAVBytes.le32(32_000) + WAVBytes.le16(2) + WAVBytes.le16(16)
            + Array("data".utf8) + WAVBytes.le32(4) + [1, 0, 0xFE, 0xFF]
        #expect([UInt8](data) == expected)
    }

    @Test("encoded audio decodes to itself", arguments: [
        PCMAudio(sampleRate: 16_000, channels: 1, samples: [0, 1, -1, .max, .min]),
        PCMAudio(sampleRate: 44_100, channels: 2, samples: [100, -100, 200, -200]),
        PCMAudio(sampleRate: 8_000, channels: 1, samples: (0..<16_000).map { Int16(truncatingIfNeeded: $0 &* 7919) }),
    ])
    func roundTrip(_ audio: PCMAudio) throws {
        #expect(try WAV.decode(WAV.encode(audio)) == audio)
    }
}
