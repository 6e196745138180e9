// JSON as bytes, for the daemon's files and HTTP bodies; the parser and the
// writer are ControlCore's (JSONParser.swift, JSONValue+Text.swift).

extension JSONValue {
    public var data: [UInt8] { Array(text.utf8) }
}
