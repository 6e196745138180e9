// The terminal side of `parlourctl setup`: it does what SetupFlow says (print,
// read a line, send a request, draw the level meter) over one connection to the
// daemon, and nothing else, so the steps and their words stay in SatelliteCore
// where they are tested. Without a terminal it refuses before asking anything.
import Glibc
import ControlCore

enum SetupSession {
    static func run(socket: String, json: Bool, plain: Bool) -> Never {
        guard isatty(0) == 1 else { fail(SatelliteError(.invalidRequest, SetupFlow.needsTerminal), json: json) }
        let client: ControlClient
        do {
            client = try ControlClient(path: socket)
        } catch {
            fail(error, json: json)
        }
        var ids = 0
        /// Sends one request and returns its result; `event` sees the events that come before it.
        func exchange(_ request: JSONValue, event: (JSONValue) -> Void = { _ in }) -> ControlResult {
            ids += 1
            let id = JSONValue.string(String(ids))
            guard case .object(var fields) = request else { return .failure(.internalError, "A request is not an object.") }
            fields["v"] = .number(Double(ControlProtocol.version))
            fields["id"] = id
            do {
                try client.send(JSONValue.object(fields).text)
            } catch {
                return .error(error)
            }
            while let line = client.readLine() {
                guard let value = try? JSONValue.parse(line) else { continue }
                if value["event"] != nil {
                    event(value)
                } else if value["id"] == id, let result = ControlResult(json: value) {
                    return result
                }
            }
            return .failure(.daemonUnavailable, "The satellite closed the connection; see journalctl -u parlour-satellite.")
        }

        guard case .completed(let status) = exchange(["cmd": "status"]) else {
            fail(SatelliteError(.daemonUnavailable, "The satellite did not say how it stands; see journalctl -u parlour-satellite."), json: json)
        }
        var flow = SetupFlow(status: status)
        var action = flow.start()
        while true {
            switch action {
            case .ask(let text, let prompt, let secret):
                let line = Input.line(prompt: text + prompt, secret: secret)
                if secret || line == nil { Output.out("\n") }
                action = flow.next(.line(line))
            case .send(let text, let request):
                Output.out(text)
                action = flow.next(.result(exchange(request)))
            case .meter(let text, let seconds):
                Output.out(text)
                let result = exchange(["cmd": "meter", "seconds": .number(Double(seconds))]) { event in
                    if event["event"] == "level" { Output.out("\r" + MeterText.bar(event, plain: plain)) }
                }
                Output.out("\n")
                action = flow.next(.result(result))
            case .finish(let text, let code):
                Output.out(text)
                exit(code)
            }
        }
    }

    private static func fail(_ error: SatelliteError, json: Bool) -> Never {
        let result = ControlResult.error(error)
        if json {
            Output.out(result.json.text + "\n")
        } else {
            Output.err("Error: \(error.message)\n")
        }
        exit(result.exitCode)
    }
}
