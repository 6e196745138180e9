// What parlourctl prints for a result: a human sentence by default, the result
// object with --json. Pure, so the words are tested without a daemon. Names,
// addresses and words that came from a link, Bonjour or a server are shown
// escaped (DisplayText), each field on its own, so none can forge a line or
// steer the terminal; every line is escaped once more on its way out.

/// parlourctl's rendering of one result.
public enum ResultText {
    /// The text for standard output and for standard error (either may be empty). `plain` asks for
    /// ASCII marks, for a terminal that may not show UTF-8.
    public static func render(_ command: ControlCommand, _ result: ControlResult, json: Bool,
                              plain: Bool = false) -> (out: String, err: String) {
        if json { return (result.json.text + "\n", "") }
        switch result {
        case .error(let e): return ("", "Error: \(e.message.shown)\n")
        case .cancelled(let reason): return ("", "Cancelled: \(reason.sentence)\n")
        case .completed(let response): return (lines(completed(command, response, plain: plain)), "")
        }
    }

    /// `text` with each of its lines escaped: what no field escaped on its own can reach the terminal.
    static func lines(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map(\.shown).joined(separator: "\n")
    }

    /// Whether to print ASCII marks rather than ✓ and ✗: unless the locale (LC_ALL, else
    /// LC_CTYPE, else LANG) names UTF-8.
    public static func prefersPlain(environment: [String: String]) -> Bool {
        let locale = ["LC_ALL", "LC_CTYPE", "LANG"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty } ?? ""
        let lowered = locale.lowercased()
        return !(lowered.range(ofText: "utf-8") != nil || lowered.range(ofText: "utf8") != nil)
    }

    /// parlourctl's exit code: the result's (INTERFACE.md), except that a completed `doctor`
    /// exits 1 when any check failed.
    public static func exitCode(_ command: ControlCommand, _ result: ControlResult) -> Int32 {
        if command == .doctor, case .completed(let response) = result { return DoctorReport(json: response).exitCode }
        return result.exitCode
    }

    static func completed(_ command: ControlCommand, _ r: JSONValue, plain: Bool = false) -> String {
        // `--no-wait`: the daemon took the request, and the callback carries how it ends.
        if r["accepted"]?.boolValue == true {
            return "Accepted: the satellite will call the callback URL when the request ends.\n"
        }
        switch command {
        case .status: return status(r)
        case .listen:
            let heard = r["heard"]?.stringValue ?? ""
            return "Heard: \(heard.isEmpty ? "(nothing)" : heard)\nReply: \(r["reply"]?.stringValue ?? "")\(via(r))\n"
        case .ask: return "\(r["reply"]?.stringValue ?? "")\(via(r))\n"
        case .cancel: return r["cancelled"]?.boolValue == true ? "Cancelled what was under way.\n" : "Nothing was under way.\n"
        case .end: return r["released"]?.boolValue == true ? "Stopped listening; sending what was heard.\n" : "Nothing was being held.\n"
        case .version:
            return "parlour-satellite \(r["satellite"]?.stringValue ?? "?"), control protocol \(r["control"]?.intValue.map(String.init) ?? "?"), "
                + "Parlour protocol \(r["parlourProtocol"]?.stringValue ?? "?")\n"
        case .watch: return ""
        case .servers: return servers(r)
        case .pair:
            return "Paired with \(pinned(r["server"])). The token is stored, and only this server gets it.\n"
                + "Address: \(origin(r["server"]))\n"
        case .use:
            let token = r["tokenLeftBehind"]?.boolValue == true
                ? "The token stayed behind with the server it belongs to: this one gets none until parlourctl pair LINK "
                    + "or parlourctl token set."
                : "Only this server gets a request or its token."
            return "Pinned \(pinned(r["server"])) by hand. \(token)\nAddress: \(origin(r["server"]))\n"
        case .unpin:
            guard let forgotten = r["forgotten"], forgotten != .null else {
                return "Nothing was pinned. The satellite is looking for a server.\n"
            }
            return "Forgot \(pinned(forgotten)). The satellite is looking for a server again.\n"
        case .tokenSet: return "The token is stored. It is read afresh for every request.\n"
        case .tokenClear:
            return r["cleared"]?.boolValue == true ? "The token is removed.\n" : "There was no stored token.\n"
        case .room(let name):
            let room = r["room"]?.stringValue ?? ""
            let config = r["configRoom"]?.stringValue ?? ""
            if name != nil { return room.isEmpty ? "No room is set now.\n" : "The room is now \(room); the next request says so.\n" }
            guard r["source"] == "parlourctl" else { return room.isEmpty ? "No room is set.\n" : "\(room)\n" }
            let configSays = config.isEmpty ? "none" : config
            return "\(room.isEmpty ? "(none)" : room) (set with parlourctl room; the config's room is \(configSays))\n"
        case .roomReset:
            let room = r["room"]?.stringValue ?? ""
            return room.isEmpty ? "The config's room counts again: none is set.\n" : "The config's room counts again: \(room).\n"
        case .mute:
            return (r["changed"]?.boolValue == false ? "Already muted: " : "Muted: ")
                + "the microphone is closed and nothing is sent. parlourctl unmute opens it again.\n"
        case .unmute:
            return r["changed"]?.boolValue == false ? "The microphone was not muted.\n" : "Unmuted: the microphone may open again.\n"
        case .volume:
            let percent = r["percent"]?.intValue.map { "\($0)%" } ?? "?"
            return "Volume: \(percent) (\(r["control"]?.stringValue ?? "?") on \(r["card"]?.stringValue ?? "?"))\n"
        case .serverStatus: return serverStatus(r)
        case .serverService: return serverService(r)
        case .serverPipeline: return serverPipeline(r)
        case .serverDoctor: return serverDoctor(r)
        case .serverLogs:
            let lines = (r["lines"]?.arrayValue ?? []).compactMap(\.stringValue).map(\.shown)
            return lines.isEmpty ? "The \(r["service"]?.stringValue ?? "") log is empty.\n" : lines.joined(separator: "\n") + "\n"
        case .serverRestartAgent:
            return "The server's agent is restarting; the house stops answering for a few seconds.\n"
        case .doctor: return DoctorReport(json: r).text(plain: plain)
        case .meter: return MeterText.summary(r) + "\n"
        }
    }

    static func serverStatus(_ r: JSONValue) -> String {
        guard let s = try? AdminStatus.read(AnswerReader(value: r, route: .admin)) else { return r.prettyText + "\n" }
        let restart = switch s.restart {
        case "automatic": "automatic: the agent comes back by itself after a restart"
        case "manual": "manual: the agent was started in a terminal and would not come back by itself"
        default: s.restart
        }
        let saved = s.saved == s.pipeline
            ? "the same"
            : "\(s.saved.sentence)\n            (differs from the one in force until the agent restarts)"
        let services = s.services.map { service in
            "\(padded(service.name + ":", to: 12))\(service.summary) (\(service.what))\n"
        }.joined()
        return """
            Parlour:    \(s.version), role \(s.role)
            Restart:    \(restart)
            In force:   \(s.pipeline.sentence)
            Saved:      \(saved)
            \(services)Memory:     \(gigabytes(s.freeGb)) GB free of \(gigabytes(s.totalGb)) GB

            """
    }

    /// `text` cut or filled with spaces to `width` characters, as a column.
    static func padded(_ text: String, to width: Int) -> String {
        text.count >= width ? String(text.prefix(width)) : text + String(repeating: " ", count: width - text.count)
    }

    static func gigabytes(_ value: Double) -> String {
        value.rounded() == value ? String(Int(value)) : String(printf: "%.1f", value)
    }

    static func serverService(_ r: JSONValue) -> String {
        guard let service = r["service"].flatMap({ try? ManagedService.read(AnswerReader(value: $0, route: .adminService)) }) else { return r.prettyText + "\n" }
        return "\(service.name) (\(service.what)) is now \(service.summary).\n"
    }

    static func serverPipeline(_ r: JSONValue) -> String {
        var sent = PipelineChange()
        for setting in PipelineSetting.allCases {
            if let value = r["sent"]?[setting.key] { _ = sent.set(setting, value) }
        }
        let restart = r["restart"]?.stringValue ?? ""
        guard !sent.isEmpty else {
            return "Nothing to change: the server's saved pipeline already has these settings."
                + (restart == "needed" ? " A saved change is waiting for the agent to restart (parlourctl server restart-agent).\n" : "\n")
        }
        let after = switch restart {
        case "scheduled": "The server's agent is restarting to use them; the house stops answering for a few seconds."
        case "needed": "They take effect when the server's agent next starts."
        case "none": "No restart is needed: the agent already runs with them."
        default: "The server said restart \"\(restart)\"."
        }
        return "Saved \(sent.sentence). \(after)\n"
    }

    static func serverDoctor(_ r: JSONValue) -> String {
        let checks = (r["checks"]?.arrayValue ?? []).map {
            ServerCheck(name: $0["name"]?.stringValue ?? "?", status: $0["status"]?.stringValue ?? "?", detail: $0["detail"]?.stringValue ?? "")
        }
        let width = checks.map(\.name.count).max() ?? 0
        let lines = checks.map { "\($0.mark) \(padded($0.name, to: width))  \($0.detail)\n" }.joined()
        let failed = checks.filter { $0.status == "fail" }.count
        let warned = checks.filter { $0.status == "warn" }.count
        var verdict = failed == 0 ? "Nothing is broken" : "\(failed) thing\(failed == 1 ? "" : "s") to fix"
        if warned > 0 { verdict += ", \(warned) warning\(warned == 1 ? "" : "s")" }
        return lines + verdict + ".\n"
    }

    /// "NAME at URL" for a pin object.
    static func pinned(_ pin: JSONValue?) -> String {
        "\((pin?["name"]?.stringValue ?? "?").shown) at \((pin?["url"]?.stringValue ?? "?").shown)"
    }

    /// `scheme://host:port` of a pin object: where everything would go.
    static func origin(_ pin: JSONValue?) -> String {
        (pin?["url"]?.stringValue.flatMap(ServerAddress.init)?.origin ?? "?").shown
    }

    static func servers(_ r: JSONValue) -> String {
        let list = r["servers"]?.arrayValue ?? []
        guard !list.isEmpty else {
            return "No Parlour server is advertised on this network. Pair with parlourctl pair LINK, or pin one with parlourctl use URL.\n"
        }
        return list.map { s in
            let mark = s["pinned"]?.boolValue == true ? "* " : "  "
            let addresses = (s["addresses"]?.arrayValue ?? []).compactMap(\.stringValue).map(\.shown).joined(separator: " ")
            let txt = (s["txt"]?.objectValue ?? [:]).sorted { $0.key < $1.key }
                .map { "\($0.key.shown)=\(($0.value.stringValue ?? "").shown)" }.joined(separator: " ")
            return "\(mark)\((s["name"]?.stringValue ?? "?").shown)  \((s["url"]?.stringValue ?? "?").shown)"
                + (s["pinned"]?.boolValue == true ? "  (pinned)" : "")
                + "\n    addresses: \(addresses.isEmpty ? "-" : addresses)\n    txt: \(txt.isEmpty ? "-" : txt)\n"
        }.joined()
    }

    static func via(_ r: JSONValue) -> String {
        switch r["via"]?.stringValue {
        case "cloud"?: return " (answered with the cloud)"
        case "satellite"?: return " (said by the satellite itself: the house was not reached)"
        default: return ""
        }
    }

    /// One watch event as a line.
    public static func event(_ e: JSONValue, json: Bool) -> String {
        if json { return e.text + "\n" }
        return "\((e["event"]?.stringValue ?? "?").shown): \((e["message"]?.stringValue ?? "").shown)\n"
    }

    /// Status `arbitration`: the siblings seen, each with its room, or why there are none.
    static func siblings(_ arbitration: JSONValue) -> String {
        guard arbitration["enabled"]?.boolValue == true else {
            return "not looked for (arbitration.enabled is false: this satellite answers every wake)"
        }
        let list = (arbitration["siblings"]?.arrayValue ?? []).map { sibling in
            let name = (sibling["name"]?.stringValue ?? "?").shown
            let room = sibling["room"]?.stringValue ?? ""
            return room.isEmpty ? name : "\(name) (\(room.shown))"
        }
        return list.isEmpty ? "none seen (satellites holding this one's token find each other with Bonjour)" : list.joined(separator: ", ")
    }

    static func status(_ s: JSONValue) -> String {
        func word(_ v: JSONValue?) -> String {
            switch v {
            case .bool(true)?: return "yes"
            case .bool(false)?: return "no"
            case .string(let t)?: return t.isEmpty ? "-" : t.shown
            default: return "unknown"
            }
        }
        func device(_ d: JSONValue?, named key: String = "device") -> String {
            let name = (d?[key]?.stringValue ?? "?").shown
            switch d?["ok"] {
            case .bool(true)?: return "\(name) (works)"
            case .bool(false)?: return "\(name) (not working: \((d?["error"]?.stringValue ?? "unknown reason").shown))"
            default: return "\(name) (not checked yet)"
            }
        }
        let server = s["server"]
        var serverLine = "none"
        var addressLine = ""
        if let url = server?["url"]?.stringValue {
            serverLine = url.shown
            if let name = server?["name"]?.stringValue { serverLine = "\(name.shown) at \(url.shown)" }
            if let how = server?["how"]?.stringValue { serverLine += ", \(how.shown)" }
            serverLine += "; reachable: \(word(server?["reachable"])); token accepted: \(word(server?["tokenAccepted"]))"
            addressLine = "Address:    \(origin(server))\n"
            let token = server?["tokenSource"]?.stringValue.flatMap(TokenKind.init(rawValue:))
            addressLine += "Token:      " + (token.map { "the one in \($0.origin), sent to this server alone" }
                ?? "none goes to this server (parlourctl pair LINK or parlourctl token set gives it one)") + "\n"
        }
        // Only with a local wake word, as in the JSON.
        let wakeWordLine = s["wakeWord"].map { "\nWake word:  \(device($0, named: "model"))" } ?? ""
        let siblingsLine = s["arbitration"].map { "\nSiblings:   \(siblings($0))" } ?? ""
        return """
            State:      \(word(s["state"]))
            Name:       \(word(s["name"]))
            Room:       \(word(s["room"]))
            Transport:  \(word(s["transport"])) (wake: \(word(s["wake"])))
            Server:     \(serverLine)
            \(addressLine)Bonjour:    \(word(s["bonjour"]))
            Microphone: \(device(s["microphone"]))
            Speaker:    \(device(s["speaker"]))\(wakeWordLine)\(siblingsLine)
            Muted:      \(word(s["muted"]))
            Version:    \(word(s["version"]))

            """
    }
}
