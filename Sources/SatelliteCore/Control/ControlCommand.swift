// The commands the daemon takes over its socket, with their arguments checked
// once here so that the daemon only ever sees well-formed ones.
import Foundation

/// A command parlourctl (or any other program) sends to the daemon.
public enum ControlCommand: Sendable, Equatable {
    case status
    case watch
    case version
    /// Capture now; with `hold`, until an `end` arrives (or the caller goes).
    case listen(hold: Bool)
    /// Ends a held capture and sends what was heard.
    case end
    case cancel
    case ask(text: String)

    public var name: String {
        switch self {
        case .status: "status"
        case .watch: "watch"
        case .version: "version"
        case .listen: "listen"
        case .end: "end"
        case .cancel: "cancel"
        case .ask: "ask"
        }
    }

    public static let names = ["status", "watch", "version", "listen", "end", "cancel", "ask"]

    var arguments: [String: JSONValue] {
        switch self {
        case .listen(let hold): return hold ? ["hold": true] : [:]
        case .ask(let text): return ["text": .string(text)]
        default: return [:]
        }
    }

    static func decode(name: String, fields: [String: JSONValue]) -> Result<ControlCommand, SatelliteError> {
        func bad(_ message: String) -> Result<ControlCommand, SatelliteError> {
            .failure(SatelliteError(.invalidRequest, message))
        }
        switch name {
        case "status": return .success(.status)
        case "watch": return .success(.watch)
        case "version": return .success(.version)
        case "end": return .success(.end)
        case "cancel": return .success(.cancel)
        case "listen":
            switch fields["hold"] {
            case nil, .null?: return .success(.listen(hold: false))
            case .bool(let hold)?: return .success(.listen(hold: hold))
            case let other?: return bad("\"hold\" must be true or false, not \(other.kindName).")
            }
        case "ask":
            guard let text = fields["text"]?.stringValue else { return bad("ask needs \"text\", a string with the question.") }
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty else { return bad("ask needs a question; \"text\" is empty.") }
            return .success(.ask(text: trimmed))
        default:
            return .failure(SatelliteError(.unknownCommand,
                "There is no command \"\(name)\"; the daemon takes: \(names.joined(separator: ", "))."))
        }
    }
}
