// One of the model servers the Parlour server keeps warm (llm, whisper), as
// GET /admin and POST /admin/service show it, and the one line a person reads
// about it. The words follow the app's Server tab, so a satellite and a phone
// say the same thing about the same state.

/// A model server on the Parlour server.
public struct ManagedService: Sendable, Equatable {
    public var name: String
    /// What it is, in the server's words, such as "the local model".
    public var what: String
    /// Whether the server's config runs it at all.
    public var configured: Bool
    public var installed: Bool
    public var running: Bool
    public var pid: Int?
    public var lastExit: Int?
    /// Stopped by a client, or left down after crashing too often: it stays stopped until started.
    public var held: Bool

    public init(name: String, what: String, configured: Bool, installed: Bool, running: Bool, pid: Int?, lastExit: Int?, held: Bool) {
        self.name = name
        self.what = what
        self.configured = configured
        self.installed = installed
        self.running = running
        self.pid = pid
        self.lastExit = lastExit
        self.held = held
    }

    /// Where it stands, in plain words that follow "is now": "running, pid 4242".
    public var summary: String {
        if !configured { return "not run by this server" }
        if running { return pid.map { "running, pid \($0)" } ?? "running" }
        if held { return "stopped, and staying stopped until it is started" }
        if !installed { return "not installed as a service on the server" }
        if let lastExit, lastExit != 0 { return "stopped; it last exited with code \(lastExit)" }
        return "stopped"
    }

    public var json: JSONValue {
        ["name": .string(name), "what": .string(what), "configured": .bool(configured), "installed": .bool(installed),
         "running": .bool(running), "pid": pid.map { .number(Double($0)) } ?? .null,
         "lastExit": lastExit.map { .number(Double($0)) } ?? .null, "held": .bool(held)]
    }

    package static func read(_ answer: AnswerReader) throws(SatelliteError) -> ManagedService {
        ManagedService(name: try answer.string("name"), what: try answer.string("what"), configured: try answer.bool("configured"),
                       installed: try answer.bool("installed"), running: try answer.bool("running"),
                       pid: try answer.optionalInt("pid"), lastExit: try answer.optionalInt("lastExit"), held: try answer.bool("held"))
    }
}
