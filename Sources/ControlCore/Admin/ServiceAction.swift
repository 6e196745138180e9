// What can be done to one of the server's model servers (POST /admin/service).
// Its raw value is the word the server takes and the second word of the
// command (`server start llm`).

/// Start, stop or restart a model server.
public enum ServiceAction: String, Sendable, CaseIterable, Equatable {
    case start, stop, restart
}
