// parlourctl: the satellite's control tool. It parses the command line, sends
// one request to the daemon over the control socket, prints the one result and
// exits with INTERFACE.md's code for it.
import Foundation
import SatelliteCore

signal(SIGPIPE, SIG_IGN)

func finish(_ command: ControlCommand, _ result: ControlResult, json: Bool) -> Never {
    let text = ResultText.render(command, result, json: json)
    FileHandle.standardOutput.write(Data(text.out.utf8))
    FileHandle.standardError.write(Data(text.err.utf8))
    exit(result.exitCode)
}

func run(_ command: ControlCommand, json: Bool, socket: String) -> Never {
    let client: ControlClient
    do {
        client = try ControlClient(path: socket)
        try client.send(ControlProtocol.encode(command, id: "1"))
    } catch {
        finish(command, .error(error), json: json)
    }
    if case .listen(hold: true) = command {
        // Holding: capture runs until our standard input closes, then `end` sends what was heard.
        let thread = Thread {
            while let _ = readLine(strippingNewline: false) {}
            try? client.send(ControlProtocol.encode(.end, id: "2"))
        }
        thread.start()
    }
    while let line = client.readLine() {
        guard let value = try? JSONValue.parse(line) else { continue }
        if value["event"] != nil {
            FileHandle.standardOutput.write(Data(ResultText.event(value, json: json).utf8))
            continue
        }
        guard value["id"] == "1", let result = ControlResult(json: value) else { continue }
        finish(command, result, json: json)
    }
    finish(command, .failure(.daemonUnavailable, "The satellite closed the connection before answering; see journalctl -u parlour-satellite."), json: json)
}

let environment = ProcessInfo.processInfo.environment
switch ParlourctlCommandLine.parse(Array(CommandLine.arguments.dropFirst())) {
case .failure(let usage):
    FileHandle.standardError.write(Data((usage.description + "\n").utf8))
    exit(2)
case .success(let invocation):
    let socket = SatellitePaths.resolve(options: invocation.socket.map { ["socket": $0] } ?? [:], environment: environment).socket
    switch invocation.action {
    case .help(let text):
        print(text, terminator: text.hasSuffix("\n") ? "" : "\n")
        exit(0)
    case .version:
        print("parlourctl \(SatelliteVersion.satellite)")
        run(.version, json: invocation.json, socket: socket)
    case .run(let command):
        run(command, json: invocation.json, socket: socket)
    }
}
