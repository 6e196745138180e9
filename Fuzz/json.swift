// libFuzzer target: JSONValue.parse, the hand-written parser every JSON the
// satellite reads goes through, held to FoundationEssentials' JSONDecoder on
// the same bytes: a document the parser reads, JSONDecoder reads as the same
// value, and written back with `text` it parses to that value again; every
// refusal says it is not valid JSON. The other way round JSONDecoder is no
// judge: it takes a comma before `]` or `}`, a byte order mark, and any
// number at all under a repeated key (it reads numbers only when decoded), so
// what RFC 8259 refuses is JSONValueTests' to check. And it refuses `0e2`,
// which RFC 8259 allows: that one is let be.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
@testable import ControlCore

private struct Reference: Decodable {
    let value: JSONValue

    init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { value = .null }
        else if let b = try? c.decode(Bool.self) { value = .bool(b) }
        else if let n = try? c.decode(Double.self) { value = .number(n) }
        else if let s = try? c.decode(String.self) { value = .string(s) }
        else if let a = try? c.decode([Reference].self) { value = .array(a.map(\.value)) }
        else { value = .object(try c.decode([String: Reference].self).mapValues(\.value)) }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    switch JSONValue.parse(bytes) {
    case .success(let value):
        guard let theirs = try? JSONDecoder().decode(Reference.self, from: Data(bytes)).value else {
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

/// Whether a number outside strings is 0 with an exponent (`0e2`, `-0E+1`): RFC 8259's grammar
/// allows it, and JSONDecoder refuses it.
private func hasZeroWithExponent(_ bytes: UnsafeRawBufferPointer) -> Bool {
    var inString = false, escaped = false
    for (i, byte) in bytes.enumerated() {
        if inString {
            if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
        } else if byte == UInt8(ascii: "\"") {
            inString = true
        } else if byte == UInt8(ascii: "0"), i + 1 < bytes.count, bytes[i + 1] | 0x20 == UInt8(ascii: "e"),
                  i == 0 || !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i - 1]) && bytes[i - 1] != UInt8(ascii: ".") {
            return true
        }
    }
    return false
}
