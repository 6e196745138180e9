// Reading and writing JSON text. Writing is done by hand so that output is
// compact, keys are sorted (the same object always prints the same line) and
// whole numbers print without a fraction.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A document that is not JSON, with where it went wrong.
public struct JSONParseError: Error, Equatable, CustomStringConvertible {
    public let description: String
}

extension JSONValue {
    /// The deepest nesting of arrays and objects `parse` accepts. Decoding recurses once a level,
    /// and a control connection's reader thread has a 256 KiB stack, which about 150 levels
    /// overflowed: a 300-byte request crashed the daemon. No document the satellite reads comes near.
    static let maxDepth = 32

    /// Parses UTF-8 JSON text. Any top-level value is accepted, nested at most `maxDepth` deep.
    public static func parse(_ data: Data) throws(JSONParseError) -> JSONValue {
        guard !nestsDeeperThanLimit(data) else {
            throw JSONParseError(description: "it nests arrays and objects more than \(maxDepth) deep")
        }
        do {
            return try JSONDecoder().decode(JSONValue.self, from: data)
        } catch let DecodingError.dataCorrupted(context) {
            throw JSONParseError(description: "it is not valid JSON (\(context.debugDescription))")
        } catch {
            throw JSONParseError(description: "it is not valid JSON")
        }
    }

    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Data(text.utf8))
    }

    /// Whether brackets and braces outside strings open more than `maxDepth` levels. One pass and no
    /// recursion; whether the text is JSON at all is left to the decoder. Over the raw bytes: Data's
    /// own iterator took 2 ms for a spoken answer (400 KB of base64), a twentieth of that this way.
    static func nestsDeeperThanLimit(_ data: Data) -> Bool {
        data.withUnsafeBytes { nestsDeeperThanLimit($0) }
    }

    private static func nestsDeeperThanLimit(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > maxDepth { return true }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return false
    }

    /// Compact JSON text with sorted keys.
    public var text: String {
        var out = ""
        write(to: &out)
        return out
    }

    public var data: Data { Data(text.utf8) }

    /// Indented JSON text with sorted keys, for people.
    public var prettyText: String {
        var out = ""
        write(to: &out, indent: 0, pretty: true)
        return out
    }

    public func write(to out: inout String) { write(to: &out, indent: 0, pretty: false) }

    private func write(to out: inout String, indent: Int, pretty: Bool) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n): out += JSONValue.format(n)
        case .string(let s): JSONValue.quote(s, into: &out)
        case .array(let items):
            if items.isEmpty { out += "[]"; return }
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
                item.write(to: &out, indent: indent + 1, pretty: pretty)
            }
            if pretty { out += "\n" + String(repeating: "  ", count: indent) }
            out += "]"
        case .object(let fields):
            if fields.isEmpty { out += "{}"; return }
            out += "{"
            for (i, key) in fields.keys.sorted().enumerated() {
                if i > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
                JSONValue.quote(key, into: &out)
                out += pretty ? ": " : ":"
                fields[key]!.write(to: &out, indent: indent + 1, pretty: pretty)
            }
            if pretty { out += "\n" + String(repeating: "  ", count: indent) }
            out += "}"
        }
    }

    static func format(_ n: Double) -> String {
        guard n.isFinite else { return "null" }
        if n.rounded() == n && abs(n) < 1e15 { return String(Int64(n)) }
        return String(n)
    }

    static func quote(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

extension JSONValue: Decodable {
    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        // Bool first: Foundation's decoder will not read a number as a Bool, so true stays true and 1 stays 1.
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let n = try? c.decode(Double.self) { self = .number(n) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }
}
