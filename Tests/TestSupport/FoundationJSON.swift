// JSONDecoder's reading of a JSON document, to hold the hand-written parser
// (ControlCore's JSONParser) to: JSONValueTests and the json fuzz target
// (scripts/fuzz compiles this file into it) both use it.
import Foundation
import ControlCore

/// A document as JSONDecoder reads it.
public struct FoundationJSON: Decodable {
    public let value: JSONValue

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { value = .null }
        // Bool first: JSONDecoder will not read a number as a Bool, so true stays true and 1 stays 1.
        else if let b = try? c.decode(Bool.self) { value = .bool(b) }
        else if let n = try? c.decode(Double.self) { value = .number(n) }
        else if let s = try? c.decode(String.self) { value = .string(s) }
        else if let a = try? c.decode([FoundationJSON].self) { value = .array(a.map(\.value)) }
        else { value = .object(try c.decode([String: FoundationJSON].self).mapValues(\.value)) }
    }
}
