// Reading JSON text (RFC 8259, strictly: no comments, no trailing commas, no
// NaN, one value and white space around it), by hand rather than with
// FoundationEssentials' JSONDecoder: parlourctl links no Foundation, and
// with it (for the decoder and a few more) parlourctl was 14.01 MB, without
// it 7.05 MB (BENCHMARKS.md, "What each binary weighs"). It is no slower: a
// 90-byte request in 1.6 µs against JSONDecoder's 10.9, a 413 KB answer in
// 0.38 ms against 0.28 plus the 0.1 ms nesting check the decoder needed.
// Recursive descent, one level of recursion a level of nesting, refused past
// `maxDepth`; strings without escapes are copied in one go. Fuzzed against
// JSONDecoder (Fuzz/json.swift): what it reads, JSONDecoder reads as the same value.

/// A document that is not JSON, with where it went wrong.
public struct JSONParseError: Error, Equatable, CustomStringConvertible {
    public let description: String
}

extension JSONValue {
    /// The deepest nesting of arrays and objects `parse` accepts. Parsing recurses once a level,
    /// and a control connection's reader thread has a 256 KiB stack, which about 150 levels
    /// overflowed: a 300-byte request crashed the daemon. No document the satellite reads comes near.
    static let maxDepth = 32

    /// Parses UTF-8 JSON text. Any top-level value is accepted, nested at most `maxDepth` deep.
    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        var text = text
        return try text.withUTF8 { parse(UnsafeRawBufferPointer($0)) }.get()
    }

    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        try (bytes.withContiguousStorageIfAvailable { parse(UnsafeRawBufferPointer($0)) }
            ?? Array(bytes).withUnsafeBytes { parse($0) }).get()
    }

    /// The result of parsing `bytes`, for the callers that hold them in a closure.
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> Result<JSONValue, JSONParseError> {
        var parser = JSONParser(bytes)
        do throws(JSONParseError) {
            return .success(try parser.document())
        } catch {
            return .failure(error)
        }
    }
}

/// One pass over the bytes of one document.
private struct JSONParser {
    private let bytes: UnsafeRawBufferPointer
    private var at = 0
    private var depth = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    mutating func document() throws(JSONParseError) -> JSONValue {
        skipSpace()
        guard at < bytes.count else { throw invalid(bytes.isEmpty ? "it is empty" : "it holds only white space") }
        let value = try self.value()
        skipSpace()
        guard at == bytes.count else { throw invalid("more follows the value at byte \(at + 1)") }
        return value
    }

    private func invalid(_ why: String) -> JSONParseError {
        JSONParseError(description: "it is not valid JSON (\(why))")
    }

    /// "unexpected 'x' at byte 12", or "it ends early" at the end.
    private func unexpected(_ expected: String) -> JSONParseError {
        guard at < bytes.count else { return invalid("it ends where \(expected) should be") }
        let byte = bytes[at]
        let shown = byte >= 0x20 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x" + String(byte, radix: 16)
        return invalid("\(shown) at byte \(at + 1) where \(expected) should be")
    }

    private mutating func skipSpace() {
        while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x0A || bytes[at] == 0x0D || bytes[at] == 0x09 { at += 1 }
    }

    private mutating func value() throws(JSONParseError) -> JSONValue {
        guard at < bytes.count else { throw unexpected("a value") }
        switch bytes[at] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try word("true"); return .bool(true)
        case UInt8(ascii: "f"): try word("false"); return .bool(false)
        case UInt8(ascii: "n"): try word("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw unexpected("a value")
        }
    }

    private mutating func word(_ word: StaticString) throws(JSONParseError) {
        let count = word.utf8CodeUnitCount
        guard at + count <= bytes.count, (0..<count).allSatisfy({ bytes[at + $0] == word.utf8Start[$0] }) else {
            throw unexpected("a value")
        }
        at += count
    }

    private mutating func nest() throws(JSONParseError) {
        depth += 1
        if depth > JSONValue.maxDepth {
            throw JSONParseError(description: "it nests arrays and objects more than \(JSONValue.maxDepth) deep")
        }
    }

    private mutating func object() throws(JSONParseError) -> JSONValue {
        try nest()
        at += 1
        var fields: [String: JSONValue] = [:]
        skipSpace()
        if at < bytes.count, bytes[at] == UInt8(ascii: "}") {
            at += 1
            depth -= 1
            return .object(fields)
        }
        while true {
            skipSpace()
            guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw unexpected("a key in quotes") }
            let key = try string()
            skipSpace()
            guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw unexpected("':'") }
            at += 1
            skipSpace()
            // A repeated key: the first one counts, as it did with JSONDecoder.
            let value = try self.value()
            if fields[key] == nil { fields[key] = value }
            skipSpace()
            guard at < bytes.count else { throw unexpected("',' or '}'") }
            if bytes[at] == UInt8(ascii: "}") { break }
            guard bytes[at] == UInt8(ascii: ",") else { throw unexpected("',' or '}'") }
            at += 1
        }
        at += 1
        depth -= 1
        return .object(fields)
    }

    private mutating func array() throws(JSONParseError) -> JSONValue {
        try nest()
        at += 1
        var items: [JSONValue] = []
        skipSpace()
        if at < bytes.count, bytes[at] == UInt8(ascii: "]") {
            at += 1
            depth -= 1
            return .array(items)
        }
        while true {
            skipSpace()
            items.append(try value())
            skipSpace()
            guard at < bytes.count else { throw unexpected("',' or ']'") }
            if bytes[at] == UInt8(ascii: "]") { break }
            guard bytes[at] == UInt8(ascii: ",") else { throw unexpected("',' or ']'") }
            at += 1
        }
        at += 1
        depth -= 1
        return .array(items)
    }

    /// A number as RFC 8259 writes it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, within a Double's range.
    private mutating func number() throws(JSONParseError) -> Double {
        let start = at
        if bytes[at] == UInt8(ascii: "-") { at += 1 }
        guard at < bytes.count, isDigit(bytes[at]) else { throw unexpected("a digit") }
        if bytes[at] == UInt8(ascii: "0") {
            at += 1
        } else {
            skipDigits()
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
            at += 1
            guard at < bytes.count, isDigit(bytes[at]) else { throw unexpected("a digit after '.'") }
            skipDigits()
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
            at += 1
            if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
            guard at < bytes.count, isDigit(bytes[at]) else { throw unexpected("a digit of the exponent") }
            skipDigits()
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
        // Out of a Double's range either way: too large is infinite, too small is 0 from digits that are not all 0.
        let significand = text.prefix { $0 != "e" && $0 != "E" }
        guard let number = Double(text), number.isFinite, number != 0 || significand.allSatisfy({ $0 < "1" || $0 > "9" }) else {
            throw invalid("the number \(text) at byte \(start + 1) is out of a double's range")
        }
        return number
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while at < bytes.count, isDigit(bytes[at]) { at += 1 }
    }

    /// A string from its opening quote past its closing one: valid UTF-8, no control characters
    /// unescaped, and escapes of RFC 8259's own (a \u pair for a character past U+FFFF).
    private mutating func string() throws(JSONParseError) -> String {
        let start = at
        at += 1
        var out = ""
        var run = at
        while true {
            guard at < bytes.count else {
                at = start
                throw invalid("the string at byte \(start + 1) does not end")
            }
            let byte = bytes[at]
            if byte == UInt8(ascii: "\"") {
                try append(run..<at, to: &out)
                at += 1
                return out
            }
            if byte < 0x20 { throw invalid("a control character (byte 0x\(String(byte, radix: 16))) at byte \(at + 1) is inside a string; write it escaped") }
            if byte != UInt8(ascii: "\\") {
                at += 1
                continue
            }
            try append(run..<at, to: &out)
            at += 1
            guard at < bytes.count else { throw unexpected("an escape") }
            let escape = bytes[at]
            at += 1
            switch escape {
            case UInt8(ascii: "\""): out += "\""
            case UInt8(ascii: "\\"): out += "\\"
            case UInt8(ascii: "/"): out += "/"
            case UInt8(ascii: "b"): out += "\u{08}"
            case UInt8(ascii: "f"): out += "\u{0C}"
            case UInt8(ascii: "n"): out += "\n"
            case UInt8(ascii: "r"): out += "\r"
            case UInt8(ascii: "t"): out += "\t"
            case UInt8(ascii: "u"): out.unicodeScalars.append(try escapedScalar())
            default:
                at -= 1
                throw unexpected("one of \" \\ / b f n r t u after '\\'")
            }
            run = at
        }
    }

    /// The character of a \u escape (its "\u" read), taking the second half of a surrogate pair.
    private mutating func escapedScalar() throws(JSONParseError) -> Unicode.Scalar {
        let escapeStart = at - 2
        let first = try hex4()
        if let scalar = Unicode.Scalar(first) { return scalar }
        guard first < 0xDC00, at + 1 < bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") else {
            throw invalid("the escape at byte \(escapeStart + 1) is half of a surrogate pair")
        }
        at += 2
        let second = try hex4()
        guard (0xDC00...0xDFFF).contains(second),
              let scalar = Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)) else {
            throw invalid("the escape at byte \(escapeStart + 1) is half of a surrogate pair")
        }
        return scalar
    }

    private mutating func hex4() throws(JSONParseError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard at < bytes.count else { throw unexpected("four hex digits after \\u") }
            let byte = bytes[at]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw unexpected("four hex digits after \\u")
            }
            value = value << 4 | UInt32(digit)
            at += 1
        }
        return value
    }

    /// Appends the bytes of `range`, which must be UTF-8.
    private func append(_ range: Range<Int>, to out: inout String) throws(JSONParseError) {
        guard !range.isEmpty else { return }
        guard let text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self) else {
            throw invalid("the string that starts before byte \(range.lowerBound + 1) is not UTF-8")
        }
        out += text
    }
}
