// The one result every request gets (INTERFACE.md, "Results"). Both programs
// build and read it here, so the daemon and parlourctl cannot disagree on it.

/// How a request ended.
public enum ControlResult: Sendable, Equatable {
    case completed(JSONValue)
    case cancelled(CancelReason)
    case error(SatelliteError)

    public static func failure(_ code: ErrorCode, _ message: String) -> ControlResult {
        .error(SatelliteError(code, message))
    }

    /// The result object, without the request id.
    public var json: JSONValue {
        switch self {
        case .completed(let response): return ["status": "completed", "response": response]
        case .cancelled(let reason): return ["status": "cancelled", "reason": .string(reason.rawValue)]
        case .error(let e):
            var fields: [String: JSONValue] = ["status": "error", "error": .string(e.code.rawValue), "message": .string(e.message)]
            if let via = e.via { fields["via"] = .string(via) }
            if let key = e.serverKey { fields["key"] = .string(key) }
            return .object(fields)
        }
    }

    /// The line the daemon writes back for request `id`.
    public func line(id: JSONValue) -> String {
        guard case .object(var fields) = json else { return json.text }
        fields["v"] = .number(Double(ControlProtocol.version))
        fields["id"] = id
        return JSONValue.object(fields).text
    }

    /// Reads a result object back; nil when it is not one.
    public init?(json: JSONValue) {
        switch json["status"]?.stringValue {
        case "completed":
            self = .completed(json["response"] ?? .null)
        case "cancelled":
            guard let reason = json["reason"]?.stringValue.flatMap(CancelReason.init(rawValue:)) else { return nil }
            self = .cancelled(reason)
        case "error":
            let code = json["error"]?.stringValue.flatMap(ErrorCode.init(rawValue:)) ?? .internalError
            self = .error(SatelliteError(code, json["message"]?.stringValue ?? code.rawValue, via: json["via"]?.stringValue,
                                         serverKey: json["key"]?.stringValue))
        default:
            return nil
        }
    }

    /// parlourctl's exit code for this result (INTERFACE.md, "Exit codes").
    public var exitCode: Int32 {
        switch self {
        case .completed: 0
        case .cancelled: 3
        case .error(let e): e.code == .daemonUnavailable ? 4 : 1
        }
    }
}
