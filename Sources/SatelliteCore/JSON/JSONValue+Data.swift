// JSON as Data, for the daemon's files and HTTP bodies; the parser and the
// writer are ControlCore's (JSONParser.swift, JSONValue+Text.swift).
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension JSONValue {
    public static func parse(_ data: Data) throws(JSONParseError) -> JSONValue {
        try data.withUnsafeBytes { parse($0) }.get()
    }

    public var data: Data { Data(text.utf8) }
}
