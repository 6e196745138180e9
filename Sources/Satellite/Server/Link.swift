// The satellite's connection to the house's server. It alone holds the server's
// address and reads the token, so nothing else can send the token anywhere. It
// keeps status honest: it checks /health and /v1/models at start, re-checks a
// server that went away with back-off (1 s doubling to server.retryMs), and
// learns from every request whether the server answered.
import Foundation
import SatelliteCore

/// The server in use and the calls the satellite makes to it.
public actor Link {
    private let url: String?
    private let how: PinHow?
    private let tokens: TokenStore
    private let http: HTTPClient
    private let bus: EventBus
    private let keeper: StateKeeper
    private let retryCap: Duration
    private var health = ServerHealth()
    private var sleeper: Task<Void, Never>?

    /// How often a server that answers is checked again.
    static let recheckHealthy: Duration = .seconds(60)

    public init(url: String?, how: PinHow?, tokens: TokenStore, http: HTTPClient, bus: EventBus, keeper: StateKeeper, retryMs: Int) {
        self.url = url.flatMap { $0.isEmpty ? nil : $0 }
        self.how = how
        self.tokens = tokens
        self.http = http
        self.bus = bus
        self.keeper = keeper
        self.retryCap = .milliseconds(retryMs)
        health = ServerHealth(url: self.url, how: self.url == nil ? nil : how)
    }

    private func client() throws(SatelliteError) -> ParlourClient {
        guard let url else {
            throw SatelliteError(.noServer, "No server is set. Set server.url in the config, or pair with parlourctl pair LINK.")
        }
        return ParlourClient(baseURL: url, token: tokens.read(), http: http)
    }

    public func ask(text: String, client name: String, room: String) async throws(SatelliteError) -> AskAnswer {
        let client = try client()
        do {
            let answer = try await client.ask(text: text, client: name, room: room)
            learn(reachable: true, tokenAccepted: true)
            return answer
        } catch {
            learn(from: error)
            throw error
        }
    }

    public func voice(wav: Data, client name: String, room: String) async throws(SatelliteError) -> VoiceAnswer {
        let client = try client()
        do {
            let answer = try await client.voice(wav: wav, client: name, room: room)
            learn(reachable: true, tokenAccepted: true)
            return answer
        } catch {
            learn(from: error)
            throw error
        }
    }

    private func learn(from error: SatelliteError) {
        switch error.code {
        case .serverUnreachable: learn(reachable: false, tokenAccepted: health.tokenAccepted)
        case .tokenRefused: learn(reachable: true, tokenAccepted: false)
        case .serverRefused, .badAnswer: learn(reachable: true, tokenAccepted: health.tokenAccepted)
        default: break
        }
    }

    private func learn(reachable: Bool, tokenAccepted: Bool?) {
        var next = health
        next.reachable = reachable
        next.tokenAccepted = tokenAccepted
        guard next != health else { return }
        let wentAway = reachable == false && health.reachable != false
        health = next
        bus.publish(.server(health))
        keeper.update { $0.reachable = reachable }
        if wentAway { sleeper?.cancel() }  // re-check now and then with back-off
    }

    /// Checks the server now and again until cancelled.
    public func run() async {
        bus.publish(.server(health))
        keeper.update { $0.hasServer = url != nil }
        guard url != nil else { return }
        var backoff = Backoff(cap: retryCap)
        while !Task.isCancelled {
            await check()
            if health.reachable == true {
                backoff.reset()
                await pause(Link.recheckHealthy)
            } else {
                await pause(backoff.next())
            }
        }
    }

    private func check() async {
        guard let client = try? client() else { return }
        do {
            _ = try await client.health()
        } catch {
            learn(reachable: false, tokenAccepted: health.tokenAccepted)
            return
        }
        do {
            try await client.models()
            learn(reachable: true, tokenAccepted: true)
        } catch {
            learn(reachable: error.code != .serverUnreachable, tokenAccepted: error.code == .tokenRefused ? false : health.tokenAccepted)
        }
    }

    private func pause(_ duration: Duration) async {
        let task = Task { _ = try? await Task.sleep(for: duration) }
        sleeper = task
        await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
        sleeper = nil
    }

    public var current: ServerHealth { health }
    public func ping() -> Bool { true }

    // MARK: The /listen stream

    /// The server in use, for the /listen socket; nil when there is none.
    public func serverURL() -> String? { url }

    /// The token for the /listen handshake's Authorization header, and for nothing else.
    func streamToken() -> String? { tokens.read() }

    /// The /listen handshake was accepted: the server is there and took the token.
    func streamOpened() { learn(reachable: true, tokenAccepted: true) }

    /// A refused handshake looks the same for a bad token and a server that is down:
    /// /health and /v1/models tell them apart. Returns what they said.
    func streamRefused() async -> ServerHealth {
        await check()
        return health
    }
}
