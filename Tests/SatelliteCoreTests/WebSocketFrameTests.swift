// The client frames the satellite builds itself for /listen (WebSocketFrame): the
// RFC's own example, each length form, and masking that round-trips at every
// alignment, since the mask is applied eight bytes at a time.
import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("WebSocket client frames")
struct WebSocketFrameTests {
    @Test("the RFC 6455 example: a masked Hello")
    func rfcExample() {
        let frame = Array("Hello".utf8).withUnsafeBytes { WebSocketFrame.masked(.text, $0, key: 0x37FA_213D) }
        #expect(frame == [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
    }

    @Test("the length takes 7, 16 or 64 bits, with the mask bit set", arguments: [
        (0, [0x80] as [UInt8]), (125, [0xFD]), (126, [0xFE, 0x00, 0x7E]), (2560, [0xFE, 0x0A, 0x00]),
        (65535, [0xFE, 0xFF, 0xFF]), (65536, [0xFF, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00]),
    ])
    func lengths(count: Int, expected: [UInt8]) {
        let frame = [UInt8](repeating: 7, count: count).withUnsafeBytes { WebSocketFrame.masked(.binary, $0, key: 1) }
        #expect(frame[0] == 0x82)
        #expect(Array(frame[1..<(1 + expected.count)]) == expected)
        #expect(frame.count == 1 + expected.count + 4 + count)
    }

    @Test("masking again with the key gives the payload back, whatever its length and alignment")
    func roundTrip() {
        let key: UInt32 = 0xA1B2_C3D4
        let keyBytes: [UInt8] = [0xA1, 0xB2, 0xC3, 0xD4]
        let all = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        for offset in 0..<8 {
            for count in [0, 1, 7, 8, 9, 15, 16, 17, 100, 291] where offset + count <= all.count {
                let payload = Array(all[offset..<(offset + count)])
                let frame = payload.withUnsafeBytes { WebSocketFrame.masked(.binary, $0, key: key) }
                let body = Array(frame.suffix(count))
                #expect(body == payload.enumerated().map { $0.element ^ keyBytes[$0.offset % 4] })
            }
        }
    }
}
