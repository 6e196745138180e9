// One of the Parlour server's own checks (POST /admin/doctor), with the mark a
// person scans for. The server decides the verdict; this only shows it.

/// A check the server ran on itself.
public struct ServerCheck: Sendable, Equatable {
    public var name: String
    /// "ok", "warn" or "fail", as the server said it.
    public var status: String
    public var detail: String

    public init(name: String, status: String, detail: String) {
        self.name = name
        self.status = status
        self.detail = detail
    }

    /// A mark of the same width for each verdict, so the names line up.
    public var mark: String {
        switch status {
        case "ok": "[ ok ]"
        case "warn": "[warn]"
        case "fail": "[FAIL]"
        default: "[ ?? ]"
        }
    }

    public var json: JSONValue { ["name": .string(name), "status": .string(status), "detail": .string(detail)] }

    package static func read(_ answer: AnswerReader) throws(SatelliteError) -> ServerCheck {
        ServerCheck(name: try answer.string("name"), status: try answer.string("status"), detail: try answer.string("detail"))
    }
}
