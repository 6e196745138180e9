// libFuzzer target: JSONValue.parse, the hand-written parser every JSON the
// satellite reads goes through, held to FoundationEssentials' JSONDecoder on
// the same bytes. A document both accept is the same value to both, and
// written back with `text` parses to it again; one the parser refuses,
// JSONDecoder refuses too unless it nests past the parser's limit. Known
// leniencies of JSONDecoder's that RFC 8259 forbids are let be (below).
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
    let ours = JSONValue.parse(bytes)
    // JSONDecoder recurses without a limit: only documents within the parser's are given to it.
    if case .failure(let error) = ours, error.description.hasPrefix("it nests") { return 0 }
    let theirs = try? JSONDecoder().decode(Reference.self, from: Data(bytes)).value
    switch ours {
    case .success(let value):
        guard let theirs else { fatalError("JSONDecoder refuses what the parser reads as \(value.text)") }
        guard value == theirs else { fatalError("the parser reads \(value.text), JSONDecoder \(theirs.text)") }
        guard (try? JSONValue.parse(value.text)) == value else { fatalError("\(value.text) does not parse back to itself") }
    case .failure(let error):
        guard error.description.hasPrefix("it is not valid JSON (") else { fatalError("a refusal reads \(error.description)") }
        if let theirs, !Lenient.allowed(bytes) {
            fatalError("the parser refuses (\(error.description)) what JSONDecoder reads as \(theirs.text)")
        }
    }
    return 0
}

/// JSONDecoder's leniencies: a byte order mark at the start.
private enum Lenient {
    static func allowed(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.starts(with: [0xEF, 0xBB, 0xBF])
    }
}
