// GET /admin: what the Parlour server says about itself, read strictly so a
// server that answers something else is reported as such (bad_answer), and
// written back as the result of `server status`.

/// The server's own status, as `GET /admin` gives it.
public struct AdminStatus: Sendable, Equatable {
    public var version: String
    public var role: String
    /// "automatic" when the agent comes back by itself after it exits; "manual" when it was
    /// started in a terminal and would simply stop.
    public var restart: String
    /// The pipeline the agent runs with now.
    public var pipeline: Pipeline
    /// The pipeline in the server's config.json, which differs until the agent restarts.
    public var saved: Pipeline
    public var services: [ManagedService]
    public var totalGb: Double
    public var freeGb: Double

    public var json: JSONValue {
        ["version": .string(version), "role": .string(role), "restart": .string(restart),
         "pipeline": pipeline.json, "saved": saved.json, "services": .array(services.map(\.json)),
         "memory": ["totalGb": .number(totalGb), "freeGb": .number(freeGb)]]
    }

    package static func read(_ answer: AnswerReader) throws(SatelliteError) -> AdminStatus {
        var services: [ManagedService] = []
        for (index, value) in try answer.array("services").enumerated() {
            services.append(try ManagedService.read(try answer.element(value, of: "services", at: index)))
        }
        let memory = try answer.object("memory")
        return AdminStatus(version: try answer.string("version"), role: try answer.string("role"), restart: try answer.string("restart"),
                           pipeline: try Pipeline.read(try answer.object("pipeline")), saved: try Pipeline.read(try answer.object("saved")),
                           services: services, totalGb: try memory.number("totalGb"), freeGb: try memory.number("freeGb"))
    }
}
