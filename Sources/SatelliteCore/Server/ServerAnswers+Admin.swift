// What the /admin routes answer (parlour-protocol.md 1.5), read as strictly as
// the client routes: a body that is not the promised JSON is a bad_answer that
// names the route and the key, never a crash and never passed on as if it were
// the server's word. Refusals (4xx, 5xx) are ServerAnswers.refusal's, as for
// every route, so the server's own sentence reaches the person unchanged.

extension ServerAnswers {
    /// `GET /admin`.
    public static func adminStatus(_ body: [UInt8]) throws(SatelliteError) -> AdminStatus {
        try AdminStatus.read(try AnswerReader(body: body, route: .admin))
    }

    /// `POST /admin/pipeline`: the saved pipeline and whether a restart was `scheduled`, is `needed`, or `none`.
    public static func pipelineSaved(_ body: [UInt8]) throws(SatelliteError) -> (pipeline: Pipeline, restart: String) {
        let answer = try AnswerReader(body: body, route: .adminPipeline)
        return (try Pipeline.read(try answer.object("pipeline")), try answer.string("restart"))
    }

    /// `POST /admin/service`: where the service ended up.
    public static func managedService(_ body: [UInt8]) throws(SatelliteError) -> ManagedService {
        try ManagedService.read(try AnswerReader(body: body, route: .adminService))
    }

    /// `GET /admin/logs`: the log's name and its last lines.
    public static func logs(_ body: [UInt8]) throws(SatelliteError) -> (service: String, lines: [String]) {
        let answer = try AnswerReader(body: body, route: .adminLogs)
        var lines: [String] = []
        for line in try answer.array("lines") {
            guard let text = line.stringValue else { throw answer.wrong("has lines that are not all strings") }
            lines.append(text)
        }
        return (try answer.string("service"), lines)
    }

    /// `POST /admin/doctor`: the server's own checks.
    public static func doctor(_ body: [UInt8]) throws(SatelliteError) -> [ServerCheck] {
        let answer = try AnswerReader(body: body, route: .adminDoctor)
        var checks: [ServerCheck] = []
        for (index, value) in try answer.array("checks").enumerated() {
            checks.append(try ServerCheck.read(try answer.element(value, of: "checks", at: index)))
        }
        return checks
    }

    /// `POST /admin/restart`: `scheduled`.
    public static func restartScheduled(_ body: [UInt8]) throws(SatelliteError) -> String {
        try AnswerReader(body: body, route: .adminRestart).string("restart")
    }
}
