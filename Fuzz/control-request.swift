// libFuzzer target: ControlProtocol.decode on any line a client might send
// to the control socket. Every line gets a result; a request it accepts,
// written back with ControlProtocol.encode, must decode to the same request.
@testable import SatelliteCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let line = UnsafeBufferPointer(start: start, count: count)
    switch ControlProtocol.decode(line) {
    case .success(let request):
        let again = ControlProtocol.encode(request.command, id: request.id)
        guard ControlProtocol.decode(Array(again.utf8)) == .success(request) else {
            fatalError("a request written back with encode decodes to another request: \(again)")
        }
    case .failure(let rejection):
        guard [.invalidRequest, .unsupportedVersion, .unknownCommand].contains(rejection.error.code) else {
            fatalError("a rejection with the code \(rejection.error.code)")
        }
    }
    return 0
}
