// The routes of the Parlour server the satellite calls (parlour-protocol.md),
// named once for the HTTP client and for the answers read back from results.

/// The server routes the satellite calls.
public enum ServerRoute: String, Sendable, CaseIterable {
    case health = "/health"
    case models = "/v1/models"
    case ask = "/ask"
    case voice = "/voice"
    case admin = "/admin"
    case adminPipeline = "/admin/pipeline"
    case adminService = "/admin/service"
    case adminLogs = "/admin/logs"
    case adminDoctor = "/admin/doctor"
    case adminRestart = "/admin/restart"
}
