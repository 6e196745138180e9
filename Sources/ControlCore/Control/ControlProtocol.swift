// The control socket's wire format (INTERFACE.md, "The control socket"):
// newline-delimited JSON, one object a line, at most 64 KiB a line. A bad line
// is answered with an error result; it never closes the connection.

/// A request read off the control socket.
public struct ControlRequest: Sendable, Equatable {
    /// The caller's id, echoed back as it came (a string, a number or null).
    public let id: JSONValue
    public let command: ControlCommand
    /// Where the daemon itself sends the result when the request ends (`listen` and `ask` only).
    public let callback: CallbackURL?
    /// False: the request is answered at once with `{"accepted": true, "id": ...}`, and only the
    /// callback carries how it ended. Needs a callback.
    public let wait: Bool

    public init(id: JSONValue, command: ControlCommand, callback: CallbackURL? = nil, wait: Bool = true) {
        self.id = id
        self.command = command
        self.callback = callback
        self.wait = wait
    }
}

/// A line that is not a request the daemon can run, and the result to answer it with.
public struct ControlRejection: Error, Sendable, Equatable {
    public let id: JSONValue
    public let error: SatelliteError
}

public enum ControlProtocol {
    /// The version of the control protocol this build speaks.
    public static let version = 1
    public static let versionsSpoken = [1]
    /// The longest line either side may send, newline excluded.
    public static let maxLineBytes = 64 * 1024

    /// Reads one line (without its newline).
    public static func decode(_ line: some Collection<UInt8>) -> Result<ControlRequest, ControlRejection> {
        guard line.count <= maxLineBytes else {
            return .failure(ControlRejection(id: .null, error: SatelliteError(.invalidRequest,
                "The request is longer than \(maxLineBytes) bytes; send one JSON object of at most 64 KiB a line.")))
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(line)
        } catch {
            return .failure(ControlRejection(id: .null, error: SatelliteError(.invalidRequest,
                "The request is not JSON: \(error.description). Send one JSON object a line.")))
        }
        guard case .object(let fields) = value else {
            return .failure(ControlRejection(id: .null, error: SatelliteError(.invalidRequest,
                "The request is \(value.kindName), not a JSON object.")))
        }
        let id = fields["id"] ?? .null
        func reject(_ code: ErrorCode, _ message: String) -> Result<ControlRequest, ControlRejection> {
            .failure(ControlRejection(id: id, error: SatelliteError(code, message)))
        }
        guard let v = fields["v"] else {
            return reject(.invalidRequest, "The request has no \"v\"; this daemon speaks version \(version): add \"v\": \(version).")
        }
        guard let number = v.intValue, versionsSpoken.contains(number) else {
            return reject(.unsupportedVersion, "Version \(v.text) is not spoken here; this daemon speaks \(spokenText).")
        }
        guard let name = fields["cmd"]?.stringValue else {
            return reject(.invalidRequest, "The request has no \"cmd\" string naming the command.")
        }
        let command: ControlCommand
        switch ControlCommand.decode(name: name, fields: fields) {
        case .success(let decoded): command = decoded
        case .failure(let error): return .failure(ControlRejection(id: id, error: error))
        }
        var callback: CallbackURL?
        switch fields["callback"] {
        case nil, .null?: break
        case .string(let text)?:
            switch command {
            case .listen, .ask: break
            default: return reject(.invalidRequest, "\"callback\" is taken by listen and ask only, not by \(command.name).")
            }
            switch CallbackURL.parse(text) {
            case .success(let url): callback = url
            case .failure(let error): return .failure(ControlRejection(id: id, error: error))
            }
        case let other?: return reject(.invalidRequest, "\"callback\" must be a URL string, not \(other.kindName).")
        }
        var wait = true
        switch fields["wait"] {
        case nil, .null?: break
        case .bool(let value)?: wait = value
        case let other?: return reject(.invalidRequest, "\"wait\" must be true or false, not \(other.kindName).")
        }
        if !wait && callback == nil {
            return reject(.invalidRequest, "\"wait\": false needs a \"callback\": without one the result would go nowhere.")
        }
        return .success(ControlRequest(id: id, command: command, callback: callback, wait: wait))
    }

    /// "version 1", or "versions 1 and 2": what an `unsupported_version` refusal names.
    static var spokenText: String {
        let numbers = versionsSpoken.map(String.init)
        guard let last = numbers.last, numbers.count > 1 else { return "version \(numbers.joined())" }
        return "versions \(numbers.dropLast().joined(separator: ", ")) and \(last)"
    }

    /// The line a client sends for `command`; `callback` and `wait` as in ControlRequest.
    public static func encode(_ command: ControlCommand, id: JSONValue, callback: CallbackURL? = nil, wait: Bool = true) -> String {
        var fields = command.arguments
        fields["v"] = .number(Double(version))
        fields["id"] = id
        fields["cmd"] = .string(command.name)
        if let callback { fields["callback"] = .string(callback.text) }
        if !wait { fields["wait"] = false }
        return JSONValue.object(fields).text
    }
}
