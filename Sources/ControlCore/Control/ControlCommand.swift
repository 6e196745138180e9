// The commands the daemon takes over its socket, with their arguments checked
// once here so that the daemon only ever sees well-formed ones. Easy to get
// wrong: `pair` and `token set` carry the token, so a command's description is
// its name alone and no refusal here quotes a value.

/// A command parlourctl (or any other program) sends to the daemon.
public enum ControlCommand: Sendable, Equatable, CustomStringConvertible {
    case status
    case watch
    case version
    /// Capture now; with `hold`, until an `end` arrives (or the caller goes).
    case listen(hold: Bool)
    /// Ends a held capture and sends what was heard.
    case end
    case cancel
    case ask(text: String)
    /// What Bonjour finds, the pinned one marked.
    case servers
    /// Pair with a `parlour://pair?...` link, which holds the token; the daemon parses it again.
    /// `key`: the https key (`sha256/<base64>`) the person confirmed, for a certificate nobody vouches for.
    case pair(link: String, key: String? = nil)
    /// Pin a server by hand, after the same checks as pairing, with the token in force.
    case use(url: String, key: String? = nil)
    /// Forget the pinned server and look again.
    case unpin
    /// Store a new token (it never travels on a command line, only in this request).
    case tokenSet(token: String)
    case tokenClear
    /// Reads the room (nil) or sets it, from the next request on ("" for none); it outlives a restart.
    case room(name: String?)
    /// Forgets the room set with `room`: the config's counts again.
    case roomReset
    /// Closes the microphone until `unmute`, over restarts too.
    case mute
    case unmute
    /// Reads the output volume (nil) or sets it, in percent of the mixer control's range.
    case volume(percent: Int?)
    /// The pinned server's own status (`GET /admin`).
    case serverStatus
    /// Starts, stops or restarts one of the server's model servers (`llm`, `whisper`).
    case serverService(name: String, action: ServiceAction)
    /// Saves the settings of `change` that differ from the server's saved pipeline.
    case serverPipeline(PipelineChange)
    /// The server's own checks.
    case serverDoctor
    /// The last lines of one of the server's logs (`agent`, `llm`, `whisper`); nil: the server's default.
    case serverLogs(service: String, lines: Int?)
    /// Restarts the server's agent.
    case serverRestartAgent
    /// Runs every check of `parlourctl doctor`.
    case doctor
    /// Listens in on the microphone for `seconds`, sending a `level` event every 100 ms (for setup's meter):
    /// what the microphone gives, or (`processed`) what its processing makes of it (the echo cancelled).
    case meter(seconds: Int, processed: Bool = false)

    /// The name alone: the arguments of `pair` and `token set` are secrets.
    public var description: String { name }

    public var name: String {
        switch self {
        case .status: "status"
        case .watch: "watch"
        case .version: "version"
        case .listen: "listen"
        case .end: "end"
        case .cancel: "cancel"
        case .ask: "ask"
        case .servers: "servers"
        case .pair: "pair"
        case .use: "use"
        case .unpin: "unpin"
        case .tokenSet: "token set"
        case .tokenClear: "token clear"
        case .room, .roomReset: "room"
        case .mute: "mute"
        case .unmute: "unmute"
        case .volume: "volume"
        case .serverStatus: "server status"
        case .serverService(_, let action): "server \(action.rawValue)"
        case .serverPipeline: "server pipeline"
        case .serverDoctor: "server doctor"
        case .serverLogs: "server logs"
        case .serverRestartAgent: "server restart-agent"
        case .doctor: "doctor"
        case .meter: "meter"
        }
    }

    public static let names = ["status", "watch", "version", "listen", "end", "cancel", "ask",
                               "servers", "pair", "use", "unpin", "token set", "token clear",
                               "room", "mute", "unmute", "volume",
                               "server status", "server start", "server stop", "server restart", "server pipeline",
                               "server doctor", "server logs", "server restart-agent", "doctor", "meter"]

    /// Whether only those allowed to control the satellite may send the command: root, the
    /// daemon's own user and the members of group `parlour` (AccessPolicy). That is every command
    /// that changes something (the satellite's state, its files, the room, the speaker, the
    /// server), and the `server ...` commands that only read too, since they reach the house's
    /// server with its token (its logs hold what people said). Anyone who can open the socket may
    /// run the rest, which only read. A switch with no default, so a new command has to say.
    public var needsControl: Bool {
        switch self {
        case .status, .watch, .version, .servers: false
        case .room(let name): name != nil
        case .volume(let percent): percent != nil
        case .listen, .end, .cancel, .ask, .pair, .use, .unpin, .tokenSet, .tokenClear, .roomReset, .mute, .unmute: true
        case .serverStatus, .serverService, .serverPipeline, .serverDoctor, .serverLogs, .serverRestartAgent: true
        // doctor asks the server with the token, and both listen to the room.
        case .doctor, .meter: true
        }
    }

    var arguments: [String: JSONValue] {
        switch self {
        case .listen(let hold): return hold ? ["hold": true] : [:]
        case .ask(let text): return ["text": .string(text)]
        case .pair(let link, let key): return ["link": .string(link)].merging(key.map { ["key": .string($0)] } ?? [:]) { $1 }
        case .use(let url, let key): return ["url": .string(url)].merging(key.map { ["key": .string($0)] } ?? [:]) { $1 }
        case .tokenSet(let token): return ["token": .string(token)]
        case .room(let name?): return ["name": .string(name)]
        case .roomReset: return ["reset": true]
        case .volume(let percent?): return ["percent": .number(Double(percent))]
        case .serverService(let name, _): return ["name": .string(name)]
        case .serverPipeline(let change): return change.fields
        case .serverLogs(let service, let lines):
            var fields: [String: JSONValue] = ["service": .string(service)]
            if let lines { fields["lines"] = .number(Double(lines)) }
            return fields
        case .meter(let seconds, let processed):
            var fields: [String: JSONValue] = ["seconds": .number(Double(seconds))]
            if processed { fields["processed"] = true }
            return fields
        default: return [:]
        }
    }

    static let keyProblem = "\"key\" must be the confirmed https key, \"sha256/\" and the base64 of a SHA-256."

    static func decode(name: String, fields: [String: JSONValue]) -> Result<ControlCommand, SatelliteError> {
        func bad(_ message: String) -> Result<ControlCommand, SatelliteError> {
            .failure(SatelliteError(.invalidRequest, message))
        }
        func nonEmpty(_ key: String) -> String? {
            guard let text = fields[key]?.stringValue?.trimmed(), !text.isEmpty else { return nil }
            return text
        }
        /// The optional "key" of pair and use; throws when it is there but not `sha256/<base64>`.
        func confirmedKey() throws(SatelliteError) -> String? {
            switch fields["key"] {
            case nil, .null?: return nil
            case .string(let key)? where ServerKey.isValid(key): return key
            default: throw SatelliteError(.invalidRequest, keyProblem)
            }
        }
        switch name {
        case "status": return .success(.status)
        case "watch": return .success(.watch)
        case "version": return .success(.version)
        case "end": return .success(.end)
        case "cancel": return .success(.cancel)
        case "servers": return .success(.servers)
        case "unpin": return .success(.unpin)
        case "token clear": return .success(.tokenClear)
        case "mute": return .success(.mute)
        case "unmute": return .success(.unmute)
        case "room":
            let reset: Bool
            switch fields["reset"] {
            case nil, .null?: reset = false
            case .bool(let value)?: reset = value
            case let other?: return bad("\"reset\" must be true or false, not \(other.kindName).")
            }
            switch fields["name"] {
            case nil, .null?: return .success(reset ? .roomReset : .room(name: nil))
            case .string(let text)? where !reset:
                guard let name = RoomName.clean(text) else {
                    return bad("\"name\" must be a room name of at most 40 characters without control characters, or \"\" for none.")
                }
                return .success(.room(name: name))
            case .string?: return bad("room takes \"name\" or \"reset\", not both.")
            case let other?: return bad("\"name\" must be a string, the room's name, not \(other.kindName).")
            }
        case "volume":
            switch fields["percent"] {
            case nil, .null?: return .success(.volume(percent: nil))
            case let value?:
                guard let percent = value.intValue, (0...100).contains(percent) else {
                    return bad("\"percent\" must be a whole number from 0 to 100, not \(value.text).")
                }
                return .success(.volume(percent: percent))
            }
        case "server status": return .success(.serverStatus)
        case "server doctor": return .success(.serverDoctor)
        case "server restart-agent": return .success(.serverRestartAgent)
        case "server start", "server stop", "server restart":
            let action = ServiceAction(rawValue: String(name.dropFirst("server ".count)))!
            guard let service = nonEmpty("name") else { return bad("\(name) needs \"name\", the model server such as llm or whisper.") }
            return .success(.serverService(name: service, action: action))
        case "server pipeline":
            return PipelineChange.decode(fields).map(ControlCommand.serverPipeline)
        case "server logs":
            guard let service = nonEmpty("service") else { return bad("server logs needs \"service\": agent, llm or whisper.") }
            switch fields["lines"] {
            case nil, .null?: return .success(.serverLogs(service: service, lines: nil))
            case let lines?:
                guard let count = lines.intValue, count >= 1 else { return bad("\"lines\" must be a whole number of at least 1, not \(lines.text).") }
                return .success(.serverLogs(service: service, lines: count))
            }
        case "doctor": return .success(.doctor)
        case "meter":
            let processed: Bool
            switch fields["processed"] {
            case nil, .null?: processed = false
            case .bool(let value)?: processed = value
            case let other?: return bad("\"processed\" must be true or false, not \(other.kindName).")
            }
            switch fields["seconds"] {
            case nil, .null?: return .success(.meter(seconds: 5, processed: processed))
            case let value?:
                guard let seconds = value.intValue, (1...30).contains(seconds) else {
                    return bad("\"seconds\" must be a whole number from 1 to 30, not \(value.text).")
                }
                return .success(.meter(seconds: seconds, processed: processed))
            }
        case "pair":
            guard let link = nonEmpty("link") else { return bad("pair needs \"link\", the parlour://pair?... link as a string.") }
            return Result { () throws(SatelliteError) in .pair(link: link, key: try confirmedKey()) }
        case "use":
            guard let url = nonEmpty("url") else { return bad("use needs \"url\", the server's address such as http://den.local:8765.") }
            return Result { () throws(SatelliteError) in .use(url: url, key: try confirmedKey()) }
        case "token set":
            guard let token = nonEmpty("token") else { return bad("token set needs \"token\", a string that is not empty.") }
            return .success(.tokenSet(token: token))
        case "listen":
            switch fields["hold"] {
            case nil, .null?: return .success(.listen(hold: false))
            case .bool(let hold)?: return .success(.listen(hold: hold))
            case let other?: return bad("\"hold\" must be true or false, not \(other.kindName).")
            }
        case "ask":
            guard let text = fields["text"]?.stringValue else { return bad("ask needs \"text\", a string with the question.") }
            let trimmed = text.trimmed()
            guard !trimmed.isEmpty else { return bad("ask needs a question; \"text\" is empty.") }
            return .success(.ask(text: trimmed))
        default:
            return .failure(SatelliteError(.unknownCommand,
                "There is no command \"\(name)\"; the daemon takes: \(names.joined(separator: ", "))."))
        }
    }
}
