// A server's answer body read as JSON, then as the object its route promises
// (AnswerReader, in ControlCore, which has no Data: parlourctl reads results
// back with it and links no Foundation).

extension AnswerReader {
    init(body: [UInt8], route: ServerRoute) throws(SatelliteError) {
        let value: JSONValue
        do { value = try JSONValue.parse(body) } catch {
            throw SatelliteError(.badAnswer, "The server's answer to \(route.rawValue) is not JSON.")
        }
        try self.init(value: value, route: route)
    }
}
