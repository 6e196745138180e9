// `parlourctl server ...`: the Parlour server's /admin routes, asked through
// the Link, so they go to the pinned server only, with the token, and what
// they say about the server (it answered, it took the token) counts for status
// too. The server has the final say: a refusal comes back in its own words.
// Easy to get wrong: a pipeline change is worked out against the saved
// pipeline the server reports now, and only what differs is sent.
import SatelliteCore

/// Runs the `server ...` commands against the server in use.
public struct ServerAdmin: Sendable {
    private let link: Link

    public init(link: Link) {
        self.link = link
    }

    /// `server status`: `GET /admin`, as read.
    public func status() async -> ControlResult {
        await result { client throws(SatelliteError) in try await client.adminStatus().json }
    }

    /// `server start|stop|restart NAME`: `{"action", "service"}`, where the service ended up.
    public func service(_ name: String, _ action: ServiceAction) async -> ControlResult {
        await result { client throws(SatelliteError) in
            ["action": .string(action.rawValue), "service": try await client.service(name, action).json]
        }
    }

    /// `server pipeline`: reads the saved pipeline, sends only what differs from it, and answers
    /// `{"pipeline", "restart", "sent"}`. With nothing to send, nothing is sent: `restart` then says
    /// whether a change saved earlier still waits for a restart.
    public func pipeline(_ wanted: PipelineChange) async -> ControlResult {
        await result { client throws(SatelliteError) in
            let status = try await client.adminStatus()
            let change = wanted.changes(from: status.saved)
            guard !change.isEmpty else {
                return ["pipeline": status.saved.json, "restart": status.saved == status.pipeline ? "none" : "needed", "sent": [:]]
            }
            let saved = try await client.savePipeline(change)
            return ["pipeline": saved.pipeline.json, "restart": .string(saved.restart), "sent": .object(change.fields)]
        }
    }

    /// `server doctor`: `{"checks": [{"name", "status", "detail"}]}`.
    public func doctor() async -> ControlResult {
        await result { client throws(SatelliteError) in ["checks": .array(try await client.doctor().map(\.json))] }
    }

    /// `server logs NAME`: `{"service", "lines"}`.
    public func logs(_ service: String, lines: Int?) async -> ControlResult {
        await result { client throws(SatelliteError) in
            let log = try await client.logs(service, lines: lines)
            return ["service": .string(log.service), "lines": .array(log.lines.map(JSONValue.string))]
        }
    }

    /// `server restart-agent`: `{"restart": "scheduled"}`.
    public func restartAgent() async -> ControlResult {
        await result { client throws(SatelliteError) in ["restart": .string(try await client.restartAgent())] }
    }

    private func result(_ request: @Sendable (ParlourClient) async throws(SatelliteError) -> JSONValue) async -> ControlResult {
        do {
            return .completed(try await link.call(request))
        } catch {
            return .error(error)
        }
    }
}
