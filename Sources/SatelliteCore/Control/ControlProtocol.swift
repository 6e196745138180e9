// The control socket's wire format (INTERFACE.md, "The control socket"):
// newline-delimited JSON, one object a line, at most 64 KiB a line. A bad line
// is answered with an error result; it never closes the connection.
import Foundation

/// A request read off the control socket.
public struct ControlRequest: Sendable, Equatable {
    /// The caller's id, echoed back as it came (a string, a number or null).
    public let id: JSONValue
    public let command: ControlCommand
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
            value = try JSONValue.parse(Data(line))
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
            let spoken = versionsSpoken.map(String.init).joined(separator: ", ")
            return reject(.unsupportedVersion, "Version \(v.text) is not spoken here; this daemon speaks version \(spoken).")
        }
        guard let name = fields["cmd"]?.stringValue else {
            return reject(.invalidRequest, "The request has no \"cmd\" string naming the command.")
        }
        switch ControlCommand.decode(name: name, fields: fields) {
        case .success(let command): return .success(ControlRequest(id: id, command: command))
        case .failure(let error): return .failure(ControlRejection(id: id, error: error))
        }
    }

    /// The line a client sends for `command`.
    public static func encode(_ command: ControlCommand, id: JSONValue) -> String {
        var fields = command.arguments
        fields["v"] = .number(Double(version))
        fields["id"] = id
        fields["cmd"] = .string(command.name)
        return JSONValue.object(fields).text
    }
}
