// A client's WebSocket frame (RFC 6455, section 5.2), built here: libwebsockets,
// which the client used before, masks the payload a byte at a time, which was
// four tenths of the daemon's instructions while streaming, where masking eight
// bytes at a time costs a twentieth of that. Easy to get wrong: a client must mask every frame
// with a fresh, unpredictable key; the length takes 7, 7+16 or 7+64 bits.

/// Encodes one final (FIN) frame as a client sends it: masked.
public enum WebSocketFrame {
    public enum Opcode: UInt8, Sendable {
        case text = 0x1
        case binary = 0x2
        case close = 0x8
        case ping = 0x9
        case pong = 0xA
    }

    /// The frame's bytes: the header, the mask `key` as four bytes, big-endian, then the masked payload.
    public static func masked(_ opcode: Opcode, _ payload: UnsafeRawBufferPointer, key: UInt32) -> [UInt8] {
        let count = payload.count
        let lengthBytes = count < 126 ? 0 : count < 65536 ? 2 : 8
        let header = 2 + lengthBytes + 4
        return [UInt8](unsafeUninitializedCapacity: header + count) { buffer, initialized in
            let out = UnsafeMutableRawPointer(buffer.baseAddress!)
            var at = 0
            func put(_ byte: UInt8) {
                out.storeBytes(of: byte, toByteOffset: at, as: UInt8.self)
                at += 1
            }
            put(0x80 | opcode.rawValue)
            switch lengthBytes {
            case 0: put(0x80 | UInt8(count))
            case 2: put(0x80 | 126)
            default: put(0x80 | 127)
            }
            for shift in stride(from: (lengthBytes - 1) * 8, through: 0, by: -8) {
                put(UInt8(truncatingIfNeeded: count >> shift))
            }
            let keyBytes = [UInt8(key >> 24), UInt8(truncatingIfNeeded: key >> 16),
                            UInt8(truncatingIfNeeded: key >> 8), UInt8(truncatingIfNeeded: key)]
            keyBytes.forEach(put)
            mask(from: payload, to: out + at, key: keyBytes)
            initialized = header + count
        }
    }

    /// `to[i] = from[i] ^ key[i % 4]`, eight bytes at a time: the key repeated in a word
    /// in memory order lines up with the payload read in memory order, whatever the endianness.
    static func mask(from: UnsafeRawBufferPointer, to: UnsafeMutableRawPointer, key: [UInt8]) {
        let count = from.count
        guard count > 0, let source = from.baseAddress else { return }
        var word: UInt64 = 0
        withUnsafeMutableBytes(of: &word) { bytes in
            for i in 0..<8 { bytes[i] = key[i & 3] }
        }
        var at = 0
        while at + 8 <= count {
            let masked = source.loadUnaligned(fromByteOffset: at, as: UInt64.self) ^ word
            to.storeBytes(of: masked, toByteOffset: at, as: UInt64.self)
            at += 8
        }
        while at < count {
            to.storeBytes(of: source.load(fromByteOffset: at, as: UInt8.self) ^ key[at & 3], toByteOffset: at, as: UInt8.self)
            at += 1
        }
    }
}
