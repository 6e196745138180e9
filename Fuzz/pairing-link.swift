// libFuzzer target: PairingLink.parse on any text a person might paste. It
// must refuse everything that is not a link with invalid_link and a sentence,
// and a link it accepts must hold a web address, a token and a name.
@testable import SatelliteCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    switch PairingLink.parse(text) {
    case .success(let link):
        guard ServerAddress(link.url) != nil, !link.token.isEmpty, !link.name.isEmpty else {
            fatalError("accepted a link without a web address, a token or a name")
        }
    case .failure(let error):
        guard error.code == .invalidLink, !error.message.isEmpty else { fatalError("refused a link without saying why") }
    }
    return 0
}
