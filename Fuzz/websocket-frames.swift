// libFuzzer target: WebSocketDecoder on any bytes a server might send after
// the upgrade. Read whole and read in pieces (cut every N bytes, N from the
// first byte), it gives the same frames; no message it gives is over its
// bound; nothing comes after a close or a broken rule.
@testable import SatelliteCore

func frames(_ input: ArraySlice<UInt8>, every step: Int) -> [WebSocketDecoder.Frame] {
    var decoder = WebSocketDecoder(maxText: 64, maxBinary: 4096)
    var out: [WebSocketDecoder.Frame] = []
    var at = input.startIndex
    while at < input.endIndex {
        let end = min(at + step, input.endIndex)
        decoder.append(input[at..<end])
        while let frame = decoder.next() { out.append(frame) }
        at = end
    }
    return out
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard count > 0, let start else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: start, count: count))
    let input = bytes[1...]
    let whole = frames(input, every: max(input.count, 1))
    guard frames(input, every: Int(bytes[0] % 16) + 1) == whole else { fatalError("pieces gave other frames than the whole") }
    for (index, frame) in whole.enumerated() {
        switch frame {
        case .text(let text): guard text.utf8.count <= 64 else { fatalError("text over its bound") }
        case .binary(let data): guard data.count <= 4096 else { fatalError("binary over its bound") }
        case .oversized(.text, let size): guard size > 64 else { fatalError("text under its bound dropped") }
        case .oversized(.binary, let size): guard size > 4096 else { fatalError("binary under its bound dropped") }
        case .ping(let payload), .pong(let payload): guard payload.count <= 125 else { fatalError("a control frame over 125 bytes") }
        case .close(let code, _):
            guard index == whole.count - 1 else { fatalError("a frame after a close") }
            guard code == 1005 || WebSocketDecoder.mayClose(with: code) else { fatalError("a close code no server may send") }
        case .broken(let code, let what):
            guard index == whole.count - 1 else { fatalError("a frame after a broken rule") }
            guard [1002, 1007, 1009].contains(code), !what.isEmpty else { fatalError("a broken rule without its code or what") }
        }
    }
    return 0
}
