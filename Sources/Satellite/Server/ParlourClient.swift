// The server calls the satellite makes over HTTP: /health, /v1/models, /ask,
// /voice, and the /admin routes, shaped exactly as parlour-protocol.md says. A thin adapter: what answers mean
// lives in ServerAnswers. Easy to get wrong: the token goes in the header only,
// never in the query, and never into a message or a description of this value.
import SatelliteCore

/// Talks to one Parlour server over HTTP.
public struct ParlourClient: Sendable, CustomStringConvertible, CustomReflectable {
    public let baseURL: String
    private let token: String?
    /// An https server's pinned key (`sha256/<base64>`); nil: the certificate must be vouched for.
    public let key: String?
    /// The addresses the server is reached at (Pin.addresses); empty: its host is looked up.
    public let addresses: [String]
    private let http: HTTPClient
    private let timeout: Duration
    private let pipelineTimeout: Duration
    private let adminTimeout: Duration

    /// - Parameters:
    ///   - baseURL: such as `http://den.local:8765`; a trailing slash is ignored.
    ///   - token: sent as `Authorization: Bearer <token>` on the routes that need it; nil sends none.
    public init(baseURL: String, token: String?, http: HTTPClient, key: String? = nil, addresses: [String] = []) {
        // /voice and /ask wait for the server's pipeline, which gives up after 45 s.
        // A model server's start loads the model (the app allows 60 s); the doctor may start one too.
        self.init(baseURL: baseURL, token: token, http: http, timeout: .seconds(20), pipelineTimeout: .seconds(60),
                  adminTimeout: .seconds(90), key: key, addresses: addresses)
    }

    init(baseURL: String, token: String?, http: HTTPClient, timeout: Duration, pipelineTimeout: Duration,
         adminTimeout: Duration = .seconds(90), key: String? = nil, addresses: [String] = []) {
        self.key = key
        self.addresses = addresses
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.token = token
        self.http = http
        self.timeout = timeout
        self.pipelineTimeout = pipelineTimeout
        self.adminTimeout = adminTimeout
    }

    public var description: String { "ParlourClient(\(ServerAnswers.displayURL(baseURL)))" }
    public var customMirror: Mirror { Mirror(self, children: ["baseURL": ServerAnswers.displayURL(baseURL)]) }

    /// `GET /health`, which needs no token.
    public func health() async throws(SatelliteError) -> ServerHealthAnswer {
        let body = try await exchange(.health, method: "GET", authorised: false)
        return try ServerAnswers.health(body)
    }

    /// For an https server not yet pinned: the key it shows, and whether an authority vouches for
    /// its certificate. `GET /health`, which carries no token: nothing secret goes to a key not yet trusted.
    public func shownKey() async throws(SatelliteError) -> (key: String, verified: Bool) {
        let url = baseURL + ServerRoute.health.rawValue
        var request = HTTPRequest(method: "GET", url: url, headers: [("Accept", "application/json")], totalTimeout: timeout)
        request.wantsKey = true
        request.addresses = addresses
        for verify in [true, false] {
            request.verifyPeer = verify
            do {
                let response = try await http.send(request)
                guard let key = response.serverKey else { break }
                return (key, verify)
            } catch where verify && (error.kind == .unverified || error.kind.isClockWrong) {
                // A key is shown whatever the clock says: one pinned by its key is not checked by date.
                continue
            } catch {
                throw ServerAnswers.failure(error.kind, route: .health, url: error.url, detail: error.detail)
            }
        }
        throw SatelliteError(.badAnswer, "The server at \(ServerAnswers.displayURL(baseURL)) showed no certificate whose key could be read.")
    }

    /// `GET /v1/models`: returns when the server accepts the token.
    public func models() async throws(SatelliteError) {
        let body = try await exchange(.models, method: "GET")
        try ServerAnswers.models(body)
    }

    /// `POST /ask` with `{text, client, room}`; the room is left out when empty.
    public func ask(text: String, client: String, room: String) async throws(SatelliteError) -> AskAnswer {
        var fields: [String: JSONValue] = ["text": .string(text), "client": .string(client)]
        if !room.isEmpty { fields["room"] = .string(room) }
        let body = try await exchange(
            .ask, method: "POST", contentType: "application/json", body: JSONValue.object(fields).data, timeout: pipelineTimeout)
        return try ServerAnswers.ask(body)
    }

    /// `POST /voice?client=&room=` with a WAV file; the room is left out when empty.
    public func voice(wav: [UInt8], client: String, room: String) async throws(SatelliteError) -> VoiceAnswer {
        var query = "client=" + Self.encode(client)
        if !room.isEmpty { query += "&room=" + Self.encode(room) }
        let body = try await exchange(.voice, method: "POST", query: query, contentType: "audio/wav", body: wav, timeout: pipelineTimeout)
        return try ServerAnswers.voice(body)
    }

    // MARK: /admin (parlour-protocol.md 1.5)

    /// `GET /admin`.
    public func adminStatus() async throws(SatelliteError) -> AdminStatus {
        try ServerAnswers.adminStatus(try await exchange(.admin, method: "GET"))
    }

    /// `POST /admin/pipeline` with the settings in `change` only.
    public func savePipeline(_ change: PipelineChange) async throws(SatelliteError) -> (pipeline: Pipeline, restart: String) {
        let body = try await exchange(.adminPipeline, method: "POST", contentType: "application/json", body: JSONValue.object(change.fields).data)
        return try ServerAnswers.pipelineSaved(body)
    }

    /// `POST /admin/service`; waits for a model to load.
    public func service(_ name: String, _ action: ServiceAction) async throws(SatelliteError) -> ManagedService {
        let request: JSONValue = ["service": .string(name), "action": .string(action.rawValue)]
        let body = try await exchange(.adminService, method: "POST", contentType: "application/json", body: request.data, timeout: adminTimeout)
        return try ServerAnswers.managedService(body)
    }

    /// `GET /admin/logs?service=&lines=`; without `lines` the server gives 50.
    public func logs(_ service: String, lines: Int?) async throws(SatelliteError) -> (service: String, lines: [String]) {
        let query = "service=" + Self.encode(service) + (lines.map { "&lines=\($0)" } ?? "")
        return try ServerAnswers.logs(try await exchange(.adminLogs, method: "GET", query: query))
    }

    /// `POST /admin/doctor`; its checks may take as long as a model's start.
    public func doctor() async throws(SatelliteError) -> [ServerCheck] {
        try ServerAnswers.doctor(try await exchange(.adminDoctor, method: "POST", timeout: adminTimeout))
    }

    /// `POST /admin/restart`: 202 `{"restart":"scheduled"}`.
    public func restartAgent() async throws(SatelliteError) -> String {
        try ServerAnswers.restartScheduled(try await exchange(.adminRestart, method: "POST"))
    }

    /// Sends one request and returns a 2xx body; everything else becomes a SatelliteError.
    private func exchange(
        _ route: ServerRoute, method: String, query: String? = nil, authorised: Bool = true,
        contentType: String? = nil, body: [UInt8]? = nil, timeout: Duration? = nil
    ) async throws(SatelliteError) -> [UInt8] {
        var headers: [(name: String, value: String)] = [("Accept", "application/json")]
        let sendsToken = authorised && token != nil
        if sendsToken, let token { headers.append(("Authorization", "Bearer " + token)) }
        if let contentType { headers.append(("Content-Type", contentType)) }
        let url = baseURL + route.rawValue + (query.map { "?" + $0 } ?? "")
        var request = HTTPRequest(method: method, url: url, headers: headers, body: body, totalTimeout: timeout ?? self.timeout,
                                  pinnedKey: baseURL.lowercased().hasPrefix("https:") ? key : nil)
        request.addresses = addresses

        let response: HTTPResponse
        do {
            response = try await http.send(request)
        } catch {
            throw ServerAnswers.failure(error.kind, route: route, url: error.url, detail: error.detail)
        }
        if let refusal = ServerAnswers.refusal(status: response.status, body: response.body, route: route, sentToken: sendsToken,
                                               location: response.location, url: url) {
            throw refusal
        }
        return response.body
    }

    /// Percent-encodes a query value, keeping only RFC 3986's unreserved characters:
    /// the server reads `+` as a space, so it must be encoded too.
    static func encode(_ value: String) -> String {
        ListenURL.percentEncoded(value)
    }
}
