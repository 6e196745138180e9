// What the /admin routes answer (parlour-protocol.md 1.5), read as strictly as
// the client routes: a body that is not the promised JSON is a bad_answer that
// names the route and the key, never a crash and never passed on as if it were
// the server's word. Refusals (4xx, 5xx) are ServerAnswers.refusal's, as for
// every route, so the server's own sentence reaches the person unchanged.
import Foundation

extension ServerAnswers {
    /// `GET /admin`.
    public static func adminStatus(_ body: Data) throws(SatelliteError) -> AdminStatus {
        try AdminStatus.read(try AnswerReader(body: body, route: .admin))
    }

    /// A `server status` result read back (parlourctl's text); the same checks as the server's answer.
    public static func adminStatus(json: JSONValue) throws(SatelliteError) -> AdminStatus {
        try AdminStatus.read(try AnswerReader(value: json, route: .admin))
    }

    /// `POST /admin/pipeline`: the saved pipeline and whether a restart was `scheduled`, is `needed`, or `none`.
    public static func pipelineSaved(_ body: Data) throws(SatelliteError) -> (pipeline: Pipeline, restart: String) {
        let answer = try AnswerReader(body: body, route: .adminPipeline)
        return (try Pipeline.read(try answer.object("pipeline")), try answer.string("restart"))
    }

    /// A pipeline object read back from a result.
    public static func pipeline(json: JSONValue) throws(SatelliteError) -> Pipeline {
        try Pipeline.read(try AnswerReader(value: json, route: .adminPipeline))
    }

    /// `POST /admin/service`: where the service ended up.
    public static func managedService(_ body: Data) throws(SatelliteError) -> ManagedService {
        try ManagedService.read(try AnswerReader(body: body, route: .adminService))
    }

    /// A service object read back from a result.
    public static func managedService(json: JSONValue) throws(SatelliteError) -> ManagedService {
        try ManagedService.read(try AnswerReader(value: json, route: .adminService))
    }

    /// `GET /admin/logs`: the log's name and its last lines.
    public static func logs(_ body: Data) throws(SatelliteError) -> (service: String, lines: [String]) {
        let answer = try AnswerReader(body: body, route: .adminLogs)
        var lines: [String] = []
        for line in try answer.array("lines") {
            guard let text = line.stringValue else { throw answer.wrong("has lines that are not all strings") }
            lines.append(text)
        }
        return (try answer.string("service"), lines)
    }

    /// `POST /admin/doctor`: the server's own checks.
    public static func doctor(_ body: Data) throws(SatelliteError) -> [ServerCheck] {
        let answer = try AnswerReader(body: body, route: .adminDoctor)
        var checks: [ServerCheck] = []
        for (index, value) in try answer.array("checks").enumerated() {
            checks.append(try ServerCheck.read(try answer.element(value, of: "checks", at: index)))
        }
        return checks
    }

    /// `POST /admin/restart`: `scheduled`.
    public static func restartScheduled(_ body: Data) throws(SatelliteError) -> String {
        try AnswerReader(body: body, route: .adminRestart).string("restart")
    }
}
