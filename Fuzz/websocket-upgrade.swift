// libFuzzer target: WebSocketUpgrade reading any answer a server might give
// to the upgrade. Read whole and read as it grows (cut at N bytes, N from the
// first byte), it comes to the same verdict; an accepted head is within the
// bound and within what came; a refusal says why.
@testable import SatelliteCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard count > 0, let start else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: start, count: count))
    let answer = Array(bytes[1...])
    // The RFC's sample nonce: its accept, s3pPLMBiTxaQ9kYGzzhZRbK+xOo=, is in the dictionary.
    guard var whole = try? WebSocketUpgrade(pathAndQuery: "/listen", host: "den.local", headers: [], nonce: Array("the sample nonce".utf8)) else {
        fatalError("the request could not be built")
    }
    var growing = whole
    let verdict = whole.read(answer)
    let cut = min(Int(bytes[0]) * 67, answer.count)
    var early = growing.read(Array(answer[..<cut]))
    if early == .incomplete { early = growing.read(answer) }
    guard early == verdict else { fatalError("the answer read as it grew came to another verdict") }
    switch verdict {
    case .accepted(let headBytes):
        guard headBytes <= answer.count, headBytes <= WebSocketUpgrade.maxAnswerBytes else { fatalError("a head past what came or the bound") }
    case .invalid(let why): guard !why.isEmpty else { fatalError("refused without saying why") }
    case .incomplete: guard answer.count <= WebSocketUpgrade.maxAnswerBytes else { fatalError("no verdict past the bound") }
    case .status(let status): guard (100...999).contains(status), status != 101, !(300..<400).contains(status) else { fatalError("status \(status)") }
    case .redirect(let status, _): guard (300..<400).contains(status) else { fatalError("a redirect with status \(status)") }
    }
    return 0
}
