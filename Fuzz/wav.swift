// libFuzzer target: WAV.decode on any bytes a server might send as a reply.
// What it accepts must be whole frames of 16-bit samples, and writing them
// with WAV.encode and reading them back must give the same audio.
@testable import SatelliteCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = start.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    guard let audio = try? WAV.decode(data) else { return 0 }
    guard !audio.samples.isEmpty, audio.samples.count % audio.channels == 0 else { fatalError("accepted a partial frame") }
    guard (try? WAV.decode(WAV.encode(audio))) == audio else { fatalError("the audio it read does not survive encode and decode") }
    return 0
}
