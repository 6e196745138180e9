// libFuzzer target: ListenMessage.decode on any text message a server might
// send on /listen. It either reads a message or says what is wrong; a message
// over 4 KiB is refused whatever it holds.
@testable import SatelliteCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    do {
        _ = try ListenMessage.decode(text)
        guard text.utf8.count <= ListenMessage.maxTextBytes else { fatalError("read a message over 4 KiB") }
    } catch {
        guard !error.description.isEmpty else { fatalError("refused a message without saying why") }
    }
    return 0
}
