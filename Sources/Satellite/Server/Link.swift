// The satellite's connection to the house's server. It alone reads the token
// and sends it, so nothing else can send the token anywhere: only to the server
// in use (the pin it follows), and only the token of the place that pin names,
// or to a candidate being checked before it is pinned, with the token the
// caller chose for it. It keeps status honest: it checks /health and /v1/models when it
// starts following a server, re-checks a server that went away with back-off
// (1 s doubling to server.retryMs) and a healthy one each minute (each ten
// while a /listen socket is open to it), and learns from every request
// whether the server answered. Easy to get wrong: an answer from the server it followed
// before must not count for the one it follows now.
import Glibc
import SatelliteCore

/// The server in use and the calls the satellite makes to it.
public actor Link {
    private var pin: Pin?
    private let tokens: TokenStore
    private let http: HTTPClient
    private let bus: EventBus
    private let keeper: StateKeeper
    private let retryCap: Duration
    private var health = ServerHealth()
    /// Counts the servers followed, so the check loop starts its back-off afresh for a new one.
    private var generation = 0
    /// Ends the pause under way when finished (a child of run(), not a task of its own).
    private var sleeper: AsyncStream<Void>.Continuation?
    private var woken = false
    /// The /listen socket is open to the server in use (`streamOpened` to `streamClosed`).
    private var streamOpen = false
    /// A check was asked for (`follow`, `recheck`): it is made even while the socket is open.
    private var checkAsked = false
    /// Checks skipped in a row for the open socket: after `skipsAtMost`, one is made anyway.
    private var skipped = 0
    /// The last "not a bearer token" said, so that the check loop says it once.
    private var unusableToken: String?
    /// A pairing is replacing the state folder's token (see `hold`); the requests waiting for it.
    private var held = false
    private var waitingForToken: [CheckedContinuation<Void, Never>] = []

    /// How often a server that answers is checked again: each minute (a test may set it smaller, TestBounds).
    static let recheckHealthy: Duration = .seconds(TestBounds.recheckSeconds(getenv(TestBounds.recheckVariable).map { String(cString: $0) }))
    /// With the /listen socket open, a check in ten: a server that took the token back, or broke
    /// /health, but kept the socket is shown as it is within ten minutes.
    static let skipsAtMost = 9

    public init(tokens: TokenStore, http: HTTPClient, bus: EventBus, keeper: StateKeeper, retryMs: Int) {
        self.tokens = tokens
        self.http = http
        self.bus = bus
        self.keeper = keeper
        self.retryCap = .milliseconds(retryMs)
    }

    /// Makes `pin` the server in use (nil: there is none), and checks it at once.
    public func follow(_ pin: Pin?) {
        if pin == self.pin { return }
        let sameServer = pin?.url == self.pin?.url
        self.pin = pin
        if sameServer {
            health.name = pin?.name
            health.how = pin?.how
            health.tokenSource = pin?.tokenSource
        } else {
            health = ServerHealth(url: pin?.url, name: pin?.name, how: pin?.how, tokenSource: pin?.tokenSource)
            generation += 1
            streamOpen = false  // the socket open now goes to the server followed before
            keeper.update { $0.hasServer = pin != nil; $0.reachable = nil }
        }
        bus.publish(.server(health))
        wake()
    }

    /// Checks the server in use now rather than at the next check (after a new token).
    public func recheck() { wake() }

    /// From now until `release`, no request reads the token: it waits. A pairing holds the Link while
    /// it puts the new server's token in the state folder and follows that server, so the server
    /// followed before (whose token may be the state folder's too) is never sent the new one.
    public func hold() { held = true }

    /// Ends `hold`: the requests waiting go on, to the server followed now.
    public func release() {
        held = false
        for waiting in waitingForToken { waiting.resume() }
        waitingForToken = []
    }

    private func tokenSettled() async {
        while held { await withCheckedContinuation { waitingForToken.append($0) } }
    }

    /// Ends the pause under way, or the next one if a check is running now.
    private func wake() {
        woken = true
        checkAsked = true
        sleeper?.finish()
    }

    /// Checks a server that is not (or not yet) the one in use: `/health`, then, unless
    /// `healthOnly`, `/v1/models` with `token` (nil: none), reached only at `addresses` (empty: its
    /// name is looked up) and only while it shows `key` (when given). The error says which check
    /// failed; nothing is learned about the server in use.
    public func vet(_ url: String, token: String?, healthOnly: Bool = false, key: String? = nil,
                    addresses: [String] = []) async -> Result<Void, SatelliteError> {
        // A name with no addresses would be looked up afresh for this request, and whoever answered
        // then would be sent the token: as with a pin that is not placed, none is sent.
        let placed = !addresses.isEmpty || ServerAddress(url).map { PinMoves.isAddress($0.host) } == true
        if token != nil, !healthOnly, !placed {
            return .failure(SatelliteError(.serverUnreachable,
                "\(ServerAnswers.displayURL(url)) names a host that did not resolve, so nothing was sent to it and nothing was changed."))
        }
        let client = ParlourClient(baseURL: url, token: healthOnly ? nil : token, http: http, key: key, addresses: addresses)
        let shown = ServerAnswers.displayURL(url)
        do {
            _ = try await client.health()
        } catch {
            return .failure(SatelliteError(error.code,
                "The check of /health at \(shown) failed, so nothing was changed: \(error.message)"))
        }
        if healthOnly { return .success(()) }
        do {
            try await client.models()
        } catch where error.code == .tokenRefused {
            return .failure(SatelliteError(.tokenRefused,
                "/health at \(shown) answered, but /v1/models refused the token, so nothing was changed. "
                    + "Check that the token is this server's: run parlour pair on it for a new link."))
        } catch {
            return .failure(SatelliteError(error.code,
                "/health at \(shown) answered, but the check of /v1/models failed, so nothing was changed: \(error.message)"))
        }
        return .success(())
    }

    /// For pairing with an https server: the key it shows and whether an authority vouches for it.
    /// Only `/health`, without the token.
    public func shownKey(_ url: String, addresses: [String] = []) async -> Result<(key: String, verified: Bool), SatelliteError> {
        do {
            return .success(try await ParlourClient(baseURL: url, token: nil, http: http, addresses: addresses).shownKey())
        } catch {
            return .failure(SatelliteError(error.code,
                "The check of /health at \(ServerAnswers.displayURL(url)) failed, so nothing was changed: \(error.message)"))
        }
    }

    private func client() throws(SatelliteError) -> ParlourClient {
        guard let url = pin?.url else {
            throw SatelliteError(.noServer,
                "No server is pinned yet, and none found with Bonjour accepted the token. "
                    + "Pair with parlourctl pair LINK, pin one with parlourctl use URL, or set server.url in the config.")
        }
        return ParlourClient(baseURL: url, token: try token(), http: http, key: pin?.key, addresses: pin?.addresses ?? [])
    }

    /// The token of the place the pin in use names; throws when that place holds no bearer token.
    private func token() throws(SatelliteError) -> String? {
        // A pin that does not say where its server is gets no token (Pin.isPlaced).
        guard pin?.isPlaced != false else { return nil }
        do {
            let token = try tokens.read(pin?.tokenSource)
            unusableToken = nil
            return token
        } catch {
            if unusableToken != error.message {
                unusableToken = error.message
                bus.notice(.error, error.message, ["token_source": pin?.tokenSource?.rawValue ?? "none"])
            }
            throw error
        }
    }

    /// The token the pin in use names, read for a check or a request by someone other than the Link
    /// (the search before a pin, `use` on the same server): nil when none; throws as above.
    public func tokenInUse() throws(SatelliteError) -> String? { try token() }

    /// The first place that holds a token and what it holds, for the search while nothing is pinned
    /// (INTERFACE.md: a discovered server gets the token the satellite held when it pinned it).
    public func tokenInForce() throws(SatelliteError) -> (token: String, kind: TokenKind)? {
        guard let kind = tokens.inForce()?.kind, let token = try tokens.read(kind) else { return nil }
        return (token, kind)
    }

    public func ask(text: String, client name: String, room: String) async throws(SatelliteError) -> AskAnswer {
        try await call { client throws(SatelliteError) in try await client.ask(text: text, client: name, room: room) }
    }

    public func voice(wav: [UInt8], client name: String, room: String) async throws(SatelliteError) -> VoiceAnswer {
        try await call { client throws(SatelliteError) in try await client.voice(wav: wav, client: name, room: room) }
    }

    /// Runs `request` against the server in use, with the server's own token, and learns from its
    /// outcome whether the server answered and took the token. The only way a request reaches a
    /// server other than through the checks: so the token goes to the pinned server alone.
    public func call<Answer: Sendable>(
        _ request: @Sendable (ParlourClient) async throws(SatelliteError) -> Answer
    ) async throws(SatelliteError) -> Answer {
        await tokenSettled()
        let client = try client()
        let url = client.baseURL
        do {
            let answer = try await request(client)
            learn(reachable: true, tokenAccepted: true, about: url)
            return answer
        } catch {
            learn(from: error, about: url)
            throw error
        }
    }

    private func learn(from error: SatelliteError, about url: String) {
        switch error.code {
        case .serverUnreachable: learn(reachable: false, tokenAccepted: health.tokenAccepted, about: url)
        case .tokenRefused: learn(reachable: true, tokenAccepted: false, about: url)
        case .serverRefused, .badAnswer: learn(reachable: true, tokenAccepted: health.tokenAccepted, about: url)
        default: break
        }
    }

    /// Records what an answer from `url` said, unless the satellite has moved to another server since.
    private func learn(reachable: Bool, tokenAccepted: Bool?, about url: String) {
        guard let current = pin?.url, ParlourClient(baseURL: current, token: nil, http: http).baseURL == url else { return }
        var next = health
        next.reachable = reachable
        next.tokenAccepted = tokenAccepted
        guard next != health else { return }
        let wentAway = reachable == false && health.reachable != false
        health = next
        bus.publish(.server(health))
        keeper.update { $0.reachable = reachable }
        if wentAway { sleeper?.finish() }  // from a request: re-check now, then with back-off
    }

    /// Checks the server in use now and again until cancelled; with none, waits for `follow`.
    public func run() async {
        bus.publish(.server(health))
        var backoff = Backoff(cap: retryCap)
        var checking = generation
        while !Task.isCancelled {
            if checking != generation {
                checking = generation
                backoff.reset()
            }
            guard pin != nil else {
                await pause(.seconds(24 * 3600))
                continue
            }
            // An open /listen socket checks a healthy server already: its handshake took the token, and
            // its pings find a server gone. Then the server is asked again when the socket closes, when a
            // check is asked for, and every tenth time: streaming costs the server two requests in ten minutes.
            let asked = checkAsked
            checkAsked = false
            if asked || !streamOpen || health.reachable != true || health.tokenAccepted != true || skipped >= Link.skipsAtMost {
                skipped = 0
                await check()
            } else {
                skipped += 1
            }
            if health.reachable == true {
                backoff.reset()
                await pause(Link.recheckHealthy)
            } else {
                await pause(backoff.next())
            }
        }
    }

    /// Checks the server in use now (/health, then /v1/models with the token) and learns from it,
    /// as the check loop does: nil when both passed, else what failed (`no_server` when there is none).
    @discardableResult
    public func check() async -> SatelliteError? {
        await tokenSettled()
        let client: ParlourClient
        do {
            client = try self.client()
        } catch {
            return error
        }
        let url = client.baseURL
        do {
            _ = try await client.health()
        } catch {
            learn(reachable: false, tokenAccepted: health.tokenAccepted, about: url)
            return error
        }
        do {
            try await client.models()
            learn(reachable: true, tokenAccepted: true, about: url)
            return nil
        } catch {
            learn(reachable: error.code != .serverUnreachable,
                  tokenAccepted: error.code == .tokenRefused ? false : health.tokenAccepted, about: url)
            return error
        }
    }

    private func pause(_ duration: Duration) async {
        if woken {
            woken = false
            return
        }
        let (woke, waker) = AsyncStream.makeStream(of: Void.self)
        sleeper = waker
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: duration) }
            group.addTask { for await _ in woke {} }
            await group.next()
            group.cancelAll()
        }
        sleeper = nil
        woken = false
    }

    public var current: ServerHealth { health }

    // MARK: The /listen stream

    /// Where the /listen socket goes: the server in use, the key it must show, the addresses it is
    /// reached at and the token it is sent, all read from one pin in one step, so that a pin that
    /// moves meanwhile cannot pair one server's token with another's addresses. nil: none in use.
    /// The token is nil when the pin names no place, or the place holds no bearer token (then
    /// nothing is sent, and the check says why).
    func streamTarget() async -> StreamTarget? {
        await tokenSettled()
        guard let pin else { return nil }
        return StreamTarget(place: .init(url: pin.url, key: pin.key, addresses: pin.addresses, tokenSource: pin.tokenSource),
                            token: try? token())
    }

    /// The /listen handshake to `url` was accepted: the server is there and took the token. A socket
    /// to the server followed before, opened late, says nothing of the one followed now.
    func streamOpened(url opened: String) {
        guard let url = pin?.url, url == opened else { return }
        streamOpen = true
        learn(reachable: true, tokenAccepted: true, about: ParlourClient(baseURL: url, token: nil, http: http).baseURL)
    }

    /// The /listen socket is closed (or failed): the check loop checks the server again at its next turn.
    func streamClosed() {
        streamOpen = false
    }

    /// A refused handshake looks the same for a bad token and a server that is down:
    /// /health and /v1/models tell them apart. Returns what they said.
    func streamRefused() async -> ServerHealth {
        await check()
        return health
    }
}

/// The /listen socket's destination: `place` says which server, reached how; `token` goes with it.
struct StreamTarget: Sendable {
    struct Place: Sendable, Equatable {
        var url: String
        var key: String?
        var addresses: [String]
        var tokenSource: TokenKind?
    }

    var place: Place
    var token: String?
}
