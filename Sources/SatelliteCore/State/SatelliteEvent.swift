// The facts the actors publish on the event bus. The journal, sd_notify, the
// status model and `parlourctl watch` all read these same values, so what the
// journal says and what status says cannot disagree.

/// How loud a record is, in syslog's numbers (the journal's PRIORITY).
public enum Priority: Int, Sendable, Comparable {
    case error = 3, warning = 4, notice = 5, info = 6, debug = 7

    public static func < (a: Priority, b: Priority) -> Bool { a.rawValue > b.rawValue }

    public var word: String {
        switch self {
        case .error: "error"
        case .warning: "warning"
        case .notice: "notice"
        case .info: "info"
        case .debug: "debug"
        }
    }
}

/// A device the satellite uses, and whether it works.
public struct DeviceHealth: Sendable, Equatable {
    public var device: String
    public var ok: Bool?
    public var error: String?

    public init(device: String, ok: Bool? = nil, error: String? = nil) {
        self.device = device
        self.ok = ok
        self.error = error
    }

    public var json: JSONValue { ["device": .string(device), "ok": ok.map(JSONValue.bool) ?? .null, "error": .from(error)] }
}

/// The local wake word's model, and whether it works (status `wakeWord`, with `wake` `local`).
public struct WakeWordHealth: Sendable, Equatable {
    /// As `wakeWord.model` names it: a shipped model or a manifest's path.
    public var model: String
    public var ok: Bool?
    public var error: String?

    public init(model: String, ok: Bool? = nil, error: String? = nil) {
        self.model = model
        self.ok = ok
        self.error = error
    }

    public var json: JSONValue { ["model": .string(model), "ok": ok.map(JSONValue.bool) ?? .null, "error": .from(error)] }
}

/// The server the satellite talks to, as far as it knows.
public struct ServerHealth: Sendable, Equatable {
    public var url: String?
    public var name: String?
    public var how: PinHow?
    public var reachable: Bool?
    public var tokenAccepted: Bool?
    /// Which token goes to this server: the place its pin names, nil for none.
    public var tokenSource: TokenKind?

    public init(url: String? = nil, name: String? = nil, how: PinHow? = nil, reachable: Bool? = nil, tokenAccepted: Bool? = nil,
                tokenSource: TokenKind? = nil) {
        self.url = url
        self.name = name
        self.how = how
        self.reachable = reachable
        self.tokenAccepted = tokenAccepted
        self.tokenSource = tokenSource
    }

    public var json: JSONValue {
        ["url": .from(url), "name": .from(name), "how": .from(how?.rawValue),
         "reachable": reachable.map(JSONValue.bool) ?? .null, "tokenAccepted": tokenAccepted.map(JSONValue.bool) ?? .null,
         "tokenSource": .from(tokenSource?.rawValue)]
    }
}

/// Something that happened in the satellite.
public enum SatelliteEvent: Sendable, Equatable {
    case state(SatelliteState, previous: SatelliteState)
    case room(String)
    case muted(Bool)
    case microphone(DeviceHealth)
    case speaker(DeviceHealth)
    case server(ServerHealth)
    /// The local wake word was heard (its averaged probability); a turn starts.
    case wake(model: String, probability: Double)
    /// The local wake word's model started working or stopped.
    case wakeWord(WakeWordHealth)
    /// Siblings decided which of them answers a wake: whether this satellite does, the claim that won,
    /// and every claim that took part, this satellite's own first.
    case arbitration(won: Bool, winner: SiblingClaim, claims: [SiblingClaim])
    /// The answer asked something (or `conversation.followUp` is `always`): the satellite listens again without the wake word.
    case followUp
    /// What the server heard, for a request under way.
    case heard(String)
    case reply(text: String, via: String)
    /// A request ended; its result as the caller got it.
    case finished(command: String, result: ControlResult)
    /// Anything else worth a journal line: a fixed message, the data beside it.
    case notice(Priority, String, fields: [String: String])

    /// PARLOUR_EVENT in the journal, `event` in watch.
    public var name: String {
        switch self {
        case .state: "state"
        case .room: "room"
        case .muted: "muted"
        case .microphone: "microphone"
        case .speaker: "speaker"
        case .server: "server"
        case .wake: "wake"
        case .wakeWord: "wakeWord"
        case .arbitration: "arbitration"
        case .followUp: "followUp"
        case .heard: "heard"
        case .reply: "reply"
        case .finished: "finished"
        case .notice: "notice"
        }
    }

    public var priority: Priority {
        switch self {
        case .microphone(let d), .speaker(let d): return d.ok == false ? .warning : .info
        case .server(let s): return s.reachable == false || s.tokenAccepted == false ? .warning : .info
        case .wakeWord(let w): return w.ok == false ? .error : .info
        case .finished(_, let result):
            if case .error = result { return .warning }
            return .info
        case .notice(let p, _, _): return p
        default: return .info
        }
    }

    /// One sentence for a person reading the journal.
    public var message: String {
        switch self {
        case .state(let s, _): return "State \(s.rawValue)."
        case .room(let room): return room.isEmpty ? "The room is cleared." : "The room is now \(room)."
        case .muted(let m): return m ? "Muted: the microphone is closed." : "Unmuted: the microphone may open again."
        case .microphone(let d):
            if d.ok == false { return "The microphone \(d.device) cannot be used: \(d.error ?? "unknown reason")." }
            return "The microphone \(d.device) works."
        case .speaker(let d):
            if d.ok == false { return "The speaker \(d.device) cannot be used: \(d.error ?? "unknown reason")." }
            return "The speaker \(d.device) works."
        case .server(let s):
            guard let url = s.url else { return "No server is in use yet." }
            if s.reachable == false { return "The server \(url) cannot be reached." }
            if s.tokenAccepted == false { return "The server \(url) refused the token." }
            if s.reachable == true { return "The server \(url) answers." }
            return "The server in use is \(url)."
        case .wake(let model, let probability):
            return "Heard the wake word (\(model), probability \(String(printf: "%.3f", probability)))."
        case .wakeWord(let w):
            if w.ok == false { return "The wake word model \(w.model) stopped working: \(w.error ?? "unknown reason")." }
            return "Listening for the wake word with \(w.model)."
        case .arbitration(let won, let winner, let claims):
            let level = String(printf: "%.1f", winner.levelDb)
            let among = claims.count == 1 ? "no sibling claimed it" : "among \(claims.count) satellites"
            if won { return "Answering the wake: heard loudest here (\(level) dB), \(among)." }
            let room = winner.room.isEmpty ? "" : " in \(winner.room)"
            return "Not answering the wake: \(winner.name)\(room) heard it loudest (\(level) dB), \(among)."
        case .followUp: return "Listening again after the answer, without the wake word."
        case .heard(let text): return "Heard: \(text)"
        case .reply(let text, let via): return "Reply (\(via)): \(text)"
        case .finished(let command, let result):
            switch result {
            case .completed: return "\(command) completed."
            case .cancelled(let reason): return "\(command) cancelled: \(reason.rawValue)."
            case .error(let e): return "\(command) failed (\(e.code.rawValue)): \(e.message)"
            }
        case .notice(_, let message, _): return message
        }
    }

    /// The event as `parlourctl watch --json` prints it.
    public var json: JSONValue {
        var fields: [String: JSONValue] = ["event": .string(name), "message": .string(message)]
        switch self {
        case .state(let s, let previous):
            fields["state"] = .string(s.rawValue)
            fields["previous"] = .string(previous.rawValue)
        case .room(let room): fields["room"] = .string(room)
        case .muted(let m): fields["muted"] = .bool(m)
        case .microphone(let d): fields["microphone"] = d.json
        case .speaker(let d): fields["speaker"] = d.json
        case .server(let s): fields["server"] = s.json
        case .wake(let model, let probability):
            fields["model"] = .string(model)
            fields["probability"] = .number(probability)
        case .wakeWord(let w): fields["wakeWord"] = w.json
        case .arbitration(let won, let winner, let claims):
            fields["won"] = .bool(won)
            fields["winner"] = .string(winner.name)
            fields["room"] = .string(winner.room)
            fields["level"] = .number(winner.levelDb)
            fields["claims"] = .array(claims.map {
                ["name": .string($0.name), "room": .string($0.room), "level": .number($0.levelDb),
                 "probability": .number(Double($0.probability) / 10_000)]
            })
        case .followUp: break
        case .heard(let text): fields["heard"] = .string(text)
        case .reply(let text, let via):
            fields["reply"] = .string(text)
            fields["via"] = .string(via)
        case .finished(let command, let result):
            fields["command"] = .string(command)
            fields["result"] = result.json
        case .notice(let p, _, let extra):
            fields["priority"] = .string(p.word)
            for (k, v) in extra { fields[k] = .string(v) }
        }
        return .object(fields)
    }
}
