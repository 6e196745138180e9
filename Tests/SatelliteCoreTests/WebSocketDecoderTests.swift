// The server's frames taken apart (WebSocketDecoder): each rule of RFC 6455's
// section 5 a row, and every row again in pieces split at every byte, since a
// read may end anywhere.
import Testing
@testable import SatelliteCore

@Suite("WebSocket frames from the server")
struct WebSocketDecoderTests {
    /// A frame as a server would send it; `first` overrides the first byte, `masked` sets the mask bit (key 0).
    static func frame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, first: UInt8? = nil, masked: Bool = false) -> [UInt8] {
        var out = [first ?? ((fin ? 0x80 : 0) | opcode)]
        let mask: UInt8 = masked ? 0x80 : 0
        if payload.count < 126 {
            out.append(mask | UInt8(payload.count))
        } else if payload.count < 65536 {
            out += [mask | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        } else {
            out.append(mask | 127)
            out += (0..<8).reversed().map { UInt8(truncatingIfNeeded: payload.count >> ($0 * 8)) }
        }
        if masked { out += [0, 0, 0, 0] }
        return out + payload
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
    static func close(_ code: Int, _ reason: [UInt8] = []) -> [UInt8] { frame(8, [UInt8(code >> 8), UInt8(code & 0xff)] + reason) }

    /// Every frame the decoder gives for `input` fed as `pieces`.
    static func decode(_ pieces: [ArraySlice<UInt8>], maxText: Int = 64, maxBinary: Int = 70000) -> [WebSocketDecoder.Frame] {
        var decoder = WebSocketDecoder(maxText: maxText, maxBinary: maxBinary)
        var frames: [WebSocketDecoder.Frame] = []
        for piece in pieces {
            decoder.append(piece)
            while let frame = decoder.next() { frames.append(frame) }
        }
        return frames
    }

    static let rows: [(String, [UInt8], [WebSocketDecoder.Frame])] = [
        ("a text message", frame(1, bytes("Hello")), [.text("Hello")]),
        ("an empty binary message", frame(2, []), [.binary([])]),
        ("a 16-bit length", frame(2, [UInt8](repeating: 7, count: 300)), [.binary([UInt8](repeating: 7, count: 300))]),
        ("a 64-bit length", frame(2, [UInt8](repeating: 9, count: 65536)), [.binary([UInt8](repeating: 9, count: 65536))]),
        ("fragments with control frames between them",
         frame(1, bytes("Hel"), fin: false) + frame(9, bytes("p")) + frame(0, [], fin: false) + frame(10, []) + frame(0, bytes("lo")),
         [.ping(bytes("p")), .pong([]), .text("Hello")]),
        ("UTF-8 split between fragments", frame(1, [0xC3], fin: false) + frame(0, [0xA9]), [.text("é")]),
        ("text over its bound, dropped; the next message still read",
         frame(1, [UInt8](repeating: 65, count: 40), fin: false) + frame(0, [UInt8](repeating: 65, count: 40)) + frame(1, bytes("ok")),
         [.oversized(.text, bytes: 80), .text("ok")]),
        ("binary over its bound", frame(2, [UInt8](repeating: 1, count: 70001)), [.oversized(.binary, bytes: 70001)]),
        ("oversized text is not judged as UTF-8", frame(1, [UInt8](repeating: 0xFF, count: 65)), [.oversized(.text, bytes: 65)]),
        ("a masked frame", frame(1, bytes("hi"), masked: true), [.broken(code: 1002, what: "a masked frame")]),
        ("reserved bits", frame(1, bytes("hi"), first: 0xC1), [.broken(code: 1002, what: "a frame with reserved bits set")]),
        ("RSV3", frame(1, bytes("hi"), first: 0x91), [.broken(code: 1002, what: "a frame with reserved bits set")]),
        ("a data opcode nobody defined", frame(3, []), [.broken(code: 1002, what: "a frame of unknown kind 3")]),
        ("a control opcode nobody defined", frame(11, []), [.broken(code: 1002, what: "a frame of unknown kind 11")]),
        ("a control frame in fragments", frame(9, [], fin: false), [.broken(code: 1002, what: "a control frame in fragments")]),
        ("a ping over 125 bytes", frame(9, [UInt8](repeating: 0, count: 126)), [.broken(code: 1002, what: "a control frame over 125 bytes")]),
        ("a 16-bit length under 126", [0x82, 126, 0, 100] + [UInt8](repeating: 0, count: 100),
         [.broken(code: 1002, what: "a length not in its shortest form")]),
        ("a 64-bit length under 65536", [0x82, 127, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF],
         [.broken(code: 1002, what: "a length not in its shortest form")]),
        ("a 64-bit length with its top bit set", [0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0],
         [.broken(code: 1002, what: "a length with its top bit set")]),
        ("a frame over 2 GiB", [0x82, 127, 0, 0, 0, 0, 0x80, 0, 0, 0], [.broken(code: 1009, what: "a frame longer than 2 GiB")]),
        ("the largest 64-bit length", [0x82, 127, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
         [.broken(code: 1009, what: "a frame longer than 2 GiB")]),
        ("a continuation with no message", frame(0, bytes("x")), [.broken(code: 1002, what: "a continuation with no message")]),
        ("a new message before the last ended", frame(1, bytes("a"), fin: false) + frame(1, bytes("b")),
         [.broken(code: 1002, what: "a new message before the last one ended")]),
        ("text that is not UTF-8", frame(1, [0xFF, 0xFE]), [.broken(code: 1007, what: "text that is not UTF-8")]),
        ("a surrogate encoded in UTF-8", frame(1, [0xED, 0xA0, 0x80]), [.broken(code: 1007, what: "text that is not UTF-8")]),
        ("a close with no code", frame(8, []), [.close(code: 1005, reason: "")]),
        ("a close with a code and reason", close(1000, bytes("bye")), [.close(code: 1000, reason: "bye")]),
        ("a close's reason without line breaks or bidi controls", close(4000, bytes("a\nb\u{202E}c")), [.close(code: 4000, reason: "abc")]),
        ("a close of one byte", frame(8, [3]), [.broken(code: 1002, what: "a close frame of one byte")]),
        ("the close code 1006, never on the wire", close(1006), [.broken(code: 1002, what: "the close code 1006")]),
        ("the close code 1005", close(1005), [.broken(code: 1002, what: "the close code 1005")]),
        ("the close code 999", close(999), [.broken(code: 1002, what: "the close code 999")]),
        ("the close code 5000", close(5000), [.broken(code: 1002, what: "the close code 5000")]),
        ("the close code 3000", close(3000), [.close(code: 3000, reason: "")]),
        ("a close reason that is not UTF-8", close(1000, [0xC0]), [.broken(code: 1007, what: "a close reason that is not UTF-8")]),
        ("nothing after a close", close(1000) + frame(1, bytes("late")), [.close(code: 1000, reason: "")]),
        ("nothing after a broken rule", frame(3, []) + frame(1, bytes("late")), [.broken(code: 1002, what: "a frame of unknown kind 3")]),
        ("a control frame of 125 bytes", frame(10, [UInt8](repeating: 1, count: 125)), [.pong([UInt8](repeating: 1, count: 125))]),
    ]

    @Test("each rule, with the input whole", arguments: rows)
    func whole(name: String, input: [UInt8], expected: [WebSocketDecoder.Frame]) {
        #expect(Self.decode([input[...]]) == expected, "\(name)")
    }

    @Test("each rule, with the input in two pieces split at every byte, and a byte at a time", arguments: rows)
    func pieces(name: String, input: [UInt8], expected: [WebSocketDecoder.Frame]) {
        // The long rows are split at their edges only: every boundary of 65,536 bytes is the same code path.
        let splits = input.count < 400 ? Array(0...input.count) : Array(0..<20) + Array((input.count - 20)...input.count)
        for split in splits {
            #expect(Self.decode([input[..<split], input[split...]]) == expected, "\(name), split at \(split)")
        }
        if input.count < 400 {
            #expect(Self.decode(input.map { [$0][...] }) == expected, "\(name), a byte at a time")
        }
    }

    @Test("the decoder holds no more than what has not been taken apart")
    func buffered() {
        var decoder = WebSocketDecoder(maxText: 64, maxBinary: 64)
        decoder.append(Self.frame(1, Self.bytes("one"))[...] + Self.frame(1, Self.bytes("two"))[...])
        #expect(decoder.next() == .text("one"))
        #expect(decoder.buffered == 5)
        #expect(decoder.next() == .text("two"))
        #expect(decoder.next() == nil)
        #expect(decoder.buffered == 0)
    }
}
