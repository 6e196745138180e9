// What a WebSocket server sends the client, taken apart (RFC 6455, section 5):
// the bytes as they come, in pieces of any size, and out come whole messages
// and control frames, or the rule the server broke. Pure, so every rule is a
// table test and the whole is fuzzed (Fuzz/websocket-frames.swift); the
// socket (WebSocketClient) only feeds it and acts on what comes out.
// Easy to get wrong: a message over its bound is dropped as its bytes come,
// never held whole; control frames may come between a message's fragments;
// a server never masks; the length takes the shortest of its three forms and
// its top bit is 0; text is UTF-8 only once it is whole; nothing is read after
// a close or a broken rule.

/// A data message's kind.
public enum WebSocketMessageKind: String, Sendable {
    case text, binary
}

/// Takes a server's frames apart. Feed it with `append`, then call `next` until it says nil.
public struct WebSocketDecoder: Sendable {
    /// What the server sent, a message or control frame at a time.
    public enum Frame: Sendable, Equatable {
        case text(String)
        case binary([UInt8])
        /// A message over its bound, dropped as it came; `bytes` is its whole size.
        case oversized(WebSocketMessageKind, bytes: Int)
        case ping([UInt8])
        case pong([UInt8])
        /// The server's close: its code (1005 when it gave none) and its reason, with no control,
        /// format (bidi) or line-breaking characters, as it goes into the journal. Nothing is read after it.
        case close(code: Int, reason: String)
        /// The server broke a rule: the connection is to be closed with `code` (1002, 1007 for text
        /// that is not UTF-8, 1009 for a frame too long to count). Nothing is read after it.
        case broken(code: Int, what: String)
    }

    /// The longest frame counted at all: past it the connection is closed rather than the message dropped.
    public static let maxFrameBytes = Int(Int32.max)

    private let maxText: Int
    private let maxBinary: Int
    /// Bytes not yet taken apart, from `at` on.
    private var buffer: [UInt8] = []
    private var at = 0
    /// The data message being put together from its frames.
    private var message: Assembly?
    /// What is left of the data frame being read, and whether it is its message's last.
    private var payloadLeft = 0
    private var payloadFinal = false
    /// A close or a broken rule came: nothing more is read.
    private var ended = false

    private struct Assembly {
        let kind: WebSocketMessageKind
        var bytes = 0
        var data: [UInt8] = []
        var dropping = false
    }

    /// A text message over `maxText` bytes, or a binary one over `maxBinary`, is dropped and reported as `.oversized`.
    public init(maxText: Int, maxBinary: Int) {
        self.maxText = maxText
        self.maxBinary = maxBinary
    }

    /// Bytes that came and are not yet taken apart.
    public var buffered: Int { buffer.count - at }

    /// Adds what the server sent next.
    public mutating func append(_ bytes: ArraySlice<UInt8>) {
        guard !ended else { return }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole message or control frame, or nil until more bytes come (or for ever, after a close or a broken rule).
    public mutating func next() -> Frame? {
        while !ended {
            if payloadLeft > 0 {
                let take = min(payloadLeft, buffer.count - at)
                guard take > 0 else { return waiting() }
                // In place: a copy of the message for each of many small fragments would cost their square.
                if message?.dropping == false { message?.data.append(contentsOf: buffer[at ..< at + take]) }
                at += take
                payloadLeft -= take
                if payloadLeft == 0 && payloadFinal { return delivered() }
                continue
            }
            let (opcode, final, length, headSize): (UInt8, Bool, Int, Int)
            switch frameHead() {
            case .incomplete: return waiting()
            case .broken(let broken): return end(broken)
            case .frame(let head): (opcode, final, length, headSize) = head
            }
            if opcode >= 8 {
                guard buffer.count - at >= headSize + length else { return waiting() }
                let payload = Array(buffer[at + headSize ..< at + headSize + length])
                at += headSize + length
                return control(opcode, payload)
            }
            switch opcode {
            case 1, 2:
                guard message == nil else { return end(.broken(code: 1002, what: "a new message before the last one ended")) }
                message = Assembly(kind: opcode == 1 ? .text : .binary)
            default:
                guard message != nil else { return end(.broken(code: 1002, what: "a continuation with no message")) }
            }
            at += headSize
            let limit = message?.kind == .text ? maxText : maxBinary
            let (sum, overflow) = (message?.bytes ?? 0).addingReportingOverflow(length)
            message?.bytes = overflow ? .max : sum
            if message?.dropping == false && (overflow || sum > limit) {
                message?.dropping = true
                message?.data = []
            }
            if opcode != 0 && message?.dropping == false { message?.data.reserveCapacity(length) }
            payloadLeft = length
            payloadFinal = final
            if length == 0 && final { return delivered() }
        }
        return nil
    }

    /// Nothing whole until more comes: what was taken apart goes.
    private mutating func waiting() -> Frame? {
        if at > 0 {
            buffer.removeFirst(min(at, buffer.count))
            at = 0
        }
        return nil
    }

    private enum Head {
        case incomplete
        case broken(Frame)
        case frame((opcode: UInt8, final: Bool, length: Int, headSize: Int))
    }

    /// The head of the frame at `at`: incomplete until all of it came, or the rule it breaks. The first
    /// two bytes are judged as soon as they are in, so a broken frame is refused at once.
    private func frameHead() -> Head {
        let available = buffer.count - at
        guard available >= 2 else { return .incomplete }
        let first = buffer[at], second = buffer[at + 1]
        let opcode = first & 0x0f, final = first & 0x80 != 0
        guard first & 0x70 == 0 else { return .broken(.broken(code: 1002, what: "a frame with reserved bits set")) }
        guard second & 0x80 == 0 else { return .broken(.broken(code: 1002, what: "a masked frame")) }
        guard [0, 1, 2, 8, 9, 10].contains(opcode) else {
            return .broken(.broken(code: 1002, what: "a frame of unknown kind \(opcode)"))
        }
        var length = Int(second & 0x7f)
        if opcode >= 8 {
            guard final else { return .broken(.broken(code: 1002, what: "a control frame in fragments")) }
            guard length <= 125 else { return .broken(.broken(code: 1002, what: "a control frame over 125 bytes")) }
        }
        var headSize = 2
        if length == 126 {
            guard available >= 4 else { return .incomplete }
            length = Int(buffer[at + 2]) << 8 | Int(buffer[at + 3])
            guard length >= 126 else { return .broken(.broken(code: 1002, what: "a length not in its shortest form")) }
            headSize = 4
        } else if length == 127 {
            guard available >= 10 else { return .incomplete }
            var wide: UInt64 = 0
            for index in 0..<8 { wide = wide << 8 | UInt64(buffer[at + 2 + index]) }
            guard wide >> 63 == 0 else { return .broken(.broken(code: 1002, what: "a length with its top bit set")) }
            guard wide >= 65536 else { return .broken(.broken(code: 1002, what: "a length not in its shortest form")) }
            guard wide <= UInt64(Self.maxFrameBytes) else { return .broken(.broken(code: 1009, what: "a frame longer than 2 GiB")) }
            length = Int(wide)
            headSize = 10
        }
        return .frame((opcode, final, length, headSize))
    }

    /// A data message's last byte came.
    private mutating func delivered() -> Frame? {
        guard let whole = message else { return nil }
        message = nil
        if whole.dropping { return .oversized(whole.kind, bytes: whole.bytes) }
        if whole.kind == .binary { return .binary(whole.data) }
        guard let text = String(validating: whole.data, as: UTF8.self) else {
            return end(.broken(code: 1007, what: "text that is not UTF-8"))
        }
        return .text(text)
    }

    private mutating func control(_ opcode: UInt8, _ payload: [UInt8]) -> Frame {
        switch opcode {
        case 0x9: return .ping(payload)
        case 0xA: return .pong(payload)
        default:
            guard payload.count != 1 else { return end(.broken(code: 1002, what: "a close frame of one byte")) }
            let code = payload.count >= 2 ? Int(payload[0]) << 8 | Int(payload[1]) : 1005
            guard payload.isEmpty || Self.mayClose(with: code) else { return end(.broken(code: 1002, what: "the close code \(code)")) }
            guard let text = String(validating: payload.dropFirst(2), as: UTF8.self) else {
                return end(.broken(code: 1007, what: "a close reason that is not UTF-8"))
            }
            let shown = text.unicodeScalars.filter { ![.control, .format, .lineSeparator, .paragraphSeparator].contains($0.properties.generalCategory) }
            return end(.close(code: code, reason: String(String.UnicodeScalarView(shown))))
        }
    }

    /// The codes a close frame may carry: 1004, 1005, 1006 and 1015 never go on the wire (RFC 6455, 7.4).
    public static func mayClose(with code: Int) -> Bool {
        (1000...1003).contains(code) || (1007...1014).contains(code) || (3000...4999).contains(code)
    }

    /// The last frame: nothing is read after it, and what is held goes.
    private mutating func end(_ frame: Frame) -> Frame {
        ended = true
        buffer = []
        at = 0
        message = nil
        payloadLeft = 0
        return frame
    }
}
