// libFuzzer target: JSONValue.parse, the hand-written parser every JSON the
// satellite reads goes through, held to FoundationEssentials' JSONDecoder on
// the same bytes: a document the parser reads, JSONDecoder reads as the same
// value, and written back with `text` it parses to that value again; every
// refusal says it is not valid JSON. The other way round JSONDecoder is no
// judge: it takes a comma before `]` or `}`, a byte order mark, and any
// number at all under a repeated key (it reads numbers only when decoded), so
// what RFC 8259 refuses is JSONValueTests' to check. And it refuses most zeros
// with an exponent (`0e2`, `-0.0e1`), which RFC 8259 allows: those are let be. FoundationJSON is
// Tests/TestSupport/FoundationJSON.swift, compiled in by scripts/fuzz.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
@testable import ControlCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    switch JSONValue.parse(bytes) {
    case .success(let value):
        guard let theirs = try? JSONDecoder().decode(FoundationJSON.self, from: Data(bytes)).value else {
            if hasZeroWithExponent(bytes) { return 0 }
            fatalError("JSONDecoder refuses what the parser reads as \(value.text)")
        }
        guard value == theirs else { fatalError("the parser reads \(value.text), JSONDecoder \(theirs.text)") }
        guard (try? JSONValue.parse(value.text)) == value else { fatalError("\(value.text) does not parse back to itself") }
    case .failure(let error):
        guard error.description.hasPrefix("it is not valid JSON (") || error.description.hasPrefix("it nests") else {
            fatalError("a refusal reads \(error.description)")
        }
    }
    return 0
}

/// Whether a number outside strings is zero written with an exponent (`0e2`, `-0.0e1`, `0.00e1`):
/// RFC 8259's grammar allows it, and JSONDecoder refuses most such.
private func hasZeroWithExponent(_ bytes: UnsafeRawBufferPointer) -> Bool {
    var inString = false, escaped = false
    var token: [UInt8] = []
    func zeroWithExponent(_ token: [UInt8]) -> Bool {
        token.contains { $0 | 0x20 == UInt8(ascii: "e") } && Double(String(decoding: token, as: UTF8.self)) == 0
    }
    for byte in bytes {
        if inString {
            if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
            continue
        }
        if "0123456789.eE+-".utf8.contains(byte) {
            token.append(byte)
            continue
        }
        if zeroWithExponent(token) { return true }
        token = []
        if byte == UInt8(ascii: "\"") { inString = true }
    }
    return zeroWithExponent(token)
}
