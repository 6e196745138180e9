// Why a WebSocket connection could not be made or went away before it opened.
// It carries the step that failed (url, headers, connect, tls, handshake), for
// the log, and never the URL's query or a header: the token must not reach any log.

/// A failure of the WebSocket client below the level of the conversation.
public struct WebSocketError: Error, Equatable, CustomStringConvertible {
    /// The step that failed: "url" for an address that cannot be used, "headers", "connect", "tls" or "handshake".
    public let function: String
    /// What went wrong, as far as the library says.
    public let detail: String

    public init(function: String, detail: String) {
        self.function = function
        self.detail = detail
    }

    public var description: String { "\(function): \(detail)" }

    /// A socket URL that is not `ws://` or `wss://` with a host.
    static func badURL(_ why: String) -> WebSocketError { WebSocketError(function: "url", detail: why) }
}
