// Reads a 2xx body as the JSON object a route promises, so every answer is
// checked by one piece of code and a wrong one is named the same way: which
// route, which key (with its path, such as pipeline.concurrency), and what was
// expected. Never a crash on HTML, a list, or a number where text should be.

/// One JSON object from the server (or an object inside one); each failure is a `bad_answer`.
package struct AnswerReader {
    package let fields: [String: JSONValue]
    package let route: ServerRoute
    /// Where this object sits in the answer, such as `pipeline.`; empty at the top.
    package let path: String

    package init(value: JSONValue, route: ServerRoute, path: String = "") throws(SatelliteError) {
        self.route = route
        self.path = path
        guard let fields = value.objectValue else {
            throw path.isEmpty
                ? SatelliteError(.badAnswer, "The server's answer to \(route.rawValue) is \(value.kindName), not a JSON object.")
                : SatelliteError(.badAnswer, "The server's answer to \(route.rawValue) has \(path.dropLast()) that is \(value.kindName), not an object.")
        }
        self.fields = fields
    }

    package func wrong(_ what: String) -> SatelliteError {
        SatelliteError(.badAnswer, "The server's answer to \(route.rawValue) \(what).")
    }

    package func string(_ key: String) throws(SatelliteError) -> String {
        guard let value = fields[key]?.stringValue else { throw wrong("has no \(path)\(key) string") }
        return value
    }

    package func bool(_ key: String) throws(SatelliteError) -> Bool {
        guard let value = fields[key]?.boolValue else { throw wrong("has no \(path)\(key) true or false") }
        return value
    }

    package func int(_ key: String) throws(SatelliteError) -> Int {
        guard let value = fields[key]?.intValue else { throw wrong("has no \(path)\(key) whole number") }
        return value
    }

    package func number(_ key: String) throws(SatelliteError) -> Double {
        guard let value = fields[key]?.numberValue else { throw wrong("has no \(path)\(key) number") }
        return value
    }

    package func optionalInt(_ key: String) throws(SatelliteError) -> Int? {
        guard let value = fields[key], !value.isNull else { return nil }
        guard let number = value.intValue else { throw wrong("has \(path)\(key) that is not a whole number") }
        return number
    }

    /// The object under `key`, read the same way.
    package func object(_ key: String) throws(SatelliteError) -> AnswerReader {
        guard let value = fields[key] else { throw wrong("has no \(path)\(key) object") }
        return try AnswerReader(value: value, route: route, path: "\(path)\(key).")
    }

    /// The list under `key`.
    package func array(_ key: String) throws(SatelliteError) -> [JSONValue] {
        guard let value = fields[key]?.arrayValue else { throw wrong("has no \(path)\(key) list") }
        return value
    }

    /// Element `index` of the list under `key`, read as an object.
    package func element(_ value: JSONValue, of key: String, at index: Int) throws(SatelliteError) -> AnswerReader {
        try AnswerReader(value: value, route: route, path: "\(path)\(key)[\(index)].")
    }
}
