// Decides which server the Link follows, by PinPolicy's rules: server.url in the
// config, else the pin, else the first server Bonjour finds that passes both
// checks. It also runs the commands that change that choice (pair, use, unpin,
// token set/clear). Easy to get wrong: once a server is pinned, a newcomer is
// only named in the journal, never contacted; a person may pin while a search
// is under way (ServerPin then refuses the search's pin); and with server.url
// set, nothing here may change the choice or send the token anywhere else.
// A server and its token go together (INTERFACE.md): pairing pins the link's
// server with the link's token; `use` keeps the token only on the same origin
// (scheme, host, port), or with nothing pinned takes the one in force, and
// otherwise checks /health alone and pins with none;
// `token set` gives the server in use the state folder's token.
// The hole to keep shut: a change is two writes (the token, then pin.json) and
// takes a while (fsync), and halfway through "nothing pinned" and "the link's
// token in force" are both true, so a search would vet every Bonjour server
// with the link's token. Rather than make each reader check for a change half
// done, the changes (the commands and the search's own pin) go one at a time in
// `inLine`, and a search vets no server and pins none once a command has been
// asked for since it read the pin and the token (`asked`): it gives up, and the
// command's end starts it again. A pairing also holds the Link (Link.hold), so
// that the server followed before never gets the new token, and puts the old
// token back when the pin cannot be saved: no change is ever seen half done.
import SatelliteCore

/// Chooses the server in use and keeps the Link on it.
public actor ServerChooser {
    private let pin: ServerPin
    private let discovery: Discovery
    private let link: Link
    private let bus: EventBus
    private let stateDirectory: String
    private let retry: Duration
    private let followMoves: Bool
    /// The servers Bonjour lists now.
    private var found: [DiscoveredServer] = []
    private var newcomers = Newcomers()
    /// False while the pinned server does not answer.
    private var pinnedAnswers = true
    /// True while the server in use is known to answer where it is pinned (not merely not known to be silent).
    private var reached = false
    private var searching = false
    private var searchAgain = false
    /// Asks `run()` for the search held back; one waiting is enough.
    private let (searchesAsked, askSearch) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    /// A change (a command, or the search's pin) is under way; the changes waiting for it, in order.
    private var changing = false
    private var queued: [CheckedContinuation<Void, Never>] = []
    /// Counts the commands asked for, so that a search under way sees that one came.
    private var asked = 0

    public init(pin: ServerPin, discovery: Discovery, link: Link, bus: EventBus, stateDirectory: String, retryMs: Int,
                followMoves: Bool = true) {
        self.followMoves = followMoves
        self.pin = pin
        self.discovery = discovery
        self.link = link
        self.bus = bus
        self.stateDirectory = stateDirectory
        self.retry = .milliseconds(retryMs)
    }

    /// Follows the pin, the servers found and the pinned server's health until cancelled.
    public func run() async {
        // As the Link's service does before READY=1: whichever looks first, both follow the placed pin.
        _ = await pin.placeConfigured()
        await link.follow(await pin.current())
        let lists = await discovery.changes()
        let events = bus.subscribe()
        // The Link checks the server before this runs, and says so only when what it knows changes: a
        // server already silent at start (it moved while the satellite was off) is heard here, or never.
        await heard(await link.current)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await list in lists { await self.seen(list) } }
            // A search held back by a change runs here once the change has ended.
            group.addTask { for await _ in self.searchesAsked { await self.search() } }
            group.addTask {
                for await event in events {
                    if case .server(let health) = event { await self.heard(health) }
                }
            }
            // A server that failed the checks may pass later (it was starting, or the token changed).
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: self.retry)
                    // A configured name that did not resolve at start (mDNS not up yet) is looked up again until it does.
                    if await self.pin.placeConfigured() { await self.link.follow(await self.pin.current()) }
                    await self.followConfiguredName()
                    await self.search()
                }
            }
        }
    }

    // MARK: Commands

    /// `servers`: what Bonjour finds, the pinned one marked.
    public func servers() async -> ControlResult {
        let current = await pin.current()
        let list: [JSONValue] = found.map { server in
            guard case .object(var fields) = server.json else { return server.json }
            fields["pinned"] = .bool(current.map { PinPolicy.isPinned(Self.advertiser(server), pinned: $0) } ?? false)
            return .object(fields)
        }
        return .completed(["servers": .array(list)])
    }

    /// `pair LINK`: parses the link, checks the server with the link's token, then stores the
    /// token and pins the server with it (the state folder's, never a credential's). A refusal or
    /// a failed check changes nothing.
    public func pair(_ text: String, key confirmed: String? = nil) async -> ControlResult {
        await command { await pairNow(text, key: confirmed) }
    }

    private func pairNow(_ text: String, key confirmed: String?) async -> ControlResult {
        if let refusal = await configDecides() { return .error(refusal) }
        let link: PairingLink
        switch PairingLink.parse(text) {
        case .success(let parsed): link = parsed
        case .failure(let refusal): return .error(refusal)
        }
        let place = await whereIs(link.url)
        let key: String?
        switch await trustedKey(link.url, confirmed: confirmed, addresses: place.addresses) {
        case .success(let value): key = value
        case .failure(let refusal): return .error(refusal)
        }
        if case .failure(let failed) = await self.link.vet(link.url, token: link.token, key: key, addresses: place.addresses) {
            return .error(failed)
        }
        await self.link.hold()
        let before: [UInt8]?
        do {
            before = try await BlockingThread.local.run(throwing: { [stateDirectory] () throws(SatelliteError) -> [UInt8]? in
                let before = TokenFile.saved(stateDirectory: stateDirectory)
                try TokenFile.write(link.token, stateDirectory: stateDirectory)
                return before
            })
        } catch {
            await self.link.release()
            return .error(error)
        }
        do {
            let pinned = try await pin.pin(url: link.url, name: link.name, how: .paired, tokenSource: .state, key: key,
                                           addresses: place.addresses, instance: place.instance)
            await follow(pinned)
            await self.link.release()
            return .completed(["server": pinned.json])
        } catch {
            // The old token back before anything reads it again: the server still pinned keeps its own.
            let restored: SatelliteError?
            do throws(SatelliteError) {
                try await BlockingThread.local.run(throwing: { [stateDirectory] () throws(SatelliteError) in
                    try TokenFile.restore(before, stateDirectory: stateDirectory)
                })
                restored = nil
            } catch {
                restored = error
            }
            await self.link.release()
            return .error(restored.map { SatelliteError(error.code, error.message + " " + $0.message) } ?? error)
        }
    }

    /// `use URL`: pins by hand. With nothing pinned it takes the token the satellite holds; on the
    /// origin of the server in use it keeps that server's token; either way both routes are checked
    /// with it. Anywhere else the token stays behind: only /health is checked, and the new server
    /// gets no token until `pair` or `token set`.
    public func use(_ url: String, key confirmed: String? = nil) async -> ControlResult {
        await command { await useNow(url, key: confirmed) }
    }

    private func useNow(_ url: String, key confirmed: String?) async -> ControlResult {
        if let refusal = await configDecides() { return .error(refusal) }
        guard let address = ServerAddress(url) else {
            return .failure(.invalidRequest, ServerAddress.problem(url) ?? "")
        }
        let place = await whereIs(url)
        let key: String?
        switch await trustedKey(url, confirmed: confirmed, addresses: place.addresses) {
        case .success(let value): key = value
        case .failure(let refusal): return .error(refusal)
        }
        // Nothing pinned: the token the satellite holds (INTERFACE.md); the same origin: that server's own.
        let current = await pin.current()
        let tokenSource: TokenKind?
        let token: String?
        do {
            if let current {
                let sameServer = ServerAddress(current.url).map(address.sameOrigin) ?? false
                tokenSource = sameServer ? current.tokenSource : nil
                token = sameServer ? try await link.tokenInUse() : nil
            } else {
                let inForce = try await link.tokenInForce()
                tokenSource = inForce?.kind
                token = inForce?.token
            }
        } catch {
            return .error(error)
        }
        let checked: Result<Void, SatelliteError>
        if tokenSource != nil {
            checked = await link.vet(url, token: token, key: key, addresses: place.addresses)
        } else {
            checked = await link.vet(url, token: nil, healthOnly: true, key: key, addresses: place.addresses)
        }
        if case .failure(let failed) = checked { return .error(failed) }
        // The name Bonjour gives it, when it is advertised; else its host.
        let name = found.first { address.isAt(host: Self.advertiser($0).host, port: $0.port) }?.name ?? address.host
        do {
            let pinned = try await pin.pin(url: url, name: name, how: .manual, tokenSource: tokenSource, key: key,
                                           addresses: place.addresses, instance: place.instance)
            await follow(pinned)
            return .completed(["server": pinned.json, "tokenLeftBehind": .bool(tokenSource == nil)])
        } catch {
            return .error(error)
        }
    }

    /// `unpin`: forgets the pin and looks again (the search goes on after the answer).
    public func unpin() async -> ControlResult {
        await command { await unpinNow() }
    }

    private func unpinNow() async -> ControlResult {
        if let refusal = await configDecides() { return .error(refusal) }
        do {
            let forgotten = try await pin.unpin()
            await follow(nil)
            searchAgain = true  // once this change has ended
            return .completed(["forgotten": forgotten?.json ?? .null])
        } catch {
            return .error(error)
        }
    }

    /// `token set`: stores the token and gives it to the server in use, which is checked with it at once.
    public func setToken(_ token: String) async -> ControlResult {
        await command { await setTokenNow(token) }
    }

    private func setTokenNow(_ token: String) async -> ControlResult {
        let given: Pin?
        do {
            try await BlockingThread.local.run(throwing: { [stateDirectory] () throws(SatelliteError) in
                try TokenFile.write(token, stateDirectory: stateDirectory)
            })
            given = try await pin.giveToken(.state)
        } catch {
            return .error(error)
        }
        bus.notice(.notice, given.map { "A new token is stored, for \($0.url) alone." } ?? "A new token is stored.")
        if let given { await follow(given) }
        await link.recheck()
        searchAgain = true  // once this change has ended
        return .completed(["stored": true])
    }

    /// `token clear`.
    public func clearToken() async -> ControlResult {
        await command { await clearTokenNow() }
    }

    private func clearTokenNow() async -> ControlResult {
        do {
            let cleared = try await BlockingThread.local.run(throwing: { [stateDirectory] () throws(SatelliteError) in
                try TokenFile.clear(stateDirectory: stateDirectory)
            })
            if cleared { bus.notice(.notice, "The stored token is removed.") }
            await link.recheck()
            return .completed(["cleared": .bool(cleared)])
        } catch {
            return .error(error)
        }
    }

    /// For https: the key to pin, as ServerKey decides from the key the server shows (over
    /// /health, without the token) and the one the person confirmed. Nil for plain http.
    private func trustedKey(_ url: String, confirmed: String?, addresses: [String]) async -> Result<String?, SatelliteError> {
        guard ServerAddress(url)?.scheme == "https" else { return .success(nil) }
        let shown: (key: String, verified: Bool)
        switch await link.shownKey(url, addresses: addresses) {
        case .success(let value): shown = value
        case .failure(let error): return .failure(error)
        }
        let displayed = ServerAnswers.displayURL(url)
        switch ServerKey.decide(shown: shown.key, verified: shown.verified, confirmed: confirmed) {
        case .pin(let key): return .success(key)
        case .ask(let key): return .failure(ServerKey.unconfirmed(key, url: displayed))
        case .changed(let shown, let confirmed): return .failure(ServerKey.changed(url: displayed, shown: shown, pinned: confirmed))
        }
    }

    /// Where a server named in a URL is now, to pin: the Bonjour instance that announces that host
    /// and port (and its addresses), else what the name resolves to. None for an address itself.
    private func whereIs(_ url: String) async -> (addresses: [String], instance: String?) {
        guard let address = ServerAddress(url), !PinMoves.isAddress(address.host) else { return ([], nil) }
        if let announced = found.first(where: { address.isAt(host: $0.host, port: $0.port) }) {
            let addresses = PinMoves.pinnable(host: address.host, resolved: announced.addresses)
            if !addresses.isEmpty { return (addresses, announced.name) }
        }
        return (PinMoves.pinnable(host: address.host, resolved: await NameLookup.addresses(of: address.host)), nil)
    }

    /// With the pinned server silent, follows it where its own Bonjour instance now announces it,
    /// when PinMoves allows; otherwise the journal says why not, once per place.
    private func followMove() async {
        guard let current = await pin.current() else { return }
        guard current.how != .configured else {
            // Its moves are decided on the retry tick, with its name looked up again; answering, nothing moved,
            // and the instance that announces it there is the one a move on plain http is heard from.
            if pinnedAnswers { await decided(.stay, pin: current) }
            if reached, current.instance == nil, let instance = PinMoves.announcer(of: current, found: found) {
                await pin.announcedConfigured(by: instance)
            }
            return
        }
        await decided(PinMoves.decide(current, pinnedAnswers: pinnedAnswers, announced: announcements(), followMoves: followMoves),
                      pin: current)
    }

    private func announcements() -> [PinMoves.Announcement] {
        found.map { PinMoves.Announcement(instance: $0.name, port: $0.port, addresses: $0.addresses) }
    }

    /// With the configured server silent at its kept addresses, looks its name up again and
    /// follows it where PinMoves allows: on plain http where its own instance announces it; on
    /// https only once the server there has passed the TLS check for its name at the new
    /// addresses, asked for /health alone (no token).
    private func followConfiguredName() async {
        guard !pinnedAnswers, let current = await pin.current(), current.how == .configured, current.isPlaced,
              let host = ServerAddress(current.url)?.host, !PinMoves.isAddress(host) else { return }
        let resolved = await NameLookup.addresses(of: host)
        var decision = PinMoves.decideConfigured(current, pinnedAnswers: pinnedAnswers, resolved: resolved,
                                                 announced: announcements(), followMoves: followMoves)
        if case .prove(let from, let to) = decision {
            switch await link.vet(current.url, token: nil, healthOnly: true, key: current.key, addresses: to) {
            case .success: decision = .follow(from: from, to: to, by: .name)
            case .failure(let failed): decision = .wait(from: from, to: to, by: .name, why: "it did not prove itself there: \(failed.message)")
            }
        }
        // The server answered again meanwhile: it did not move.
        guard !pinnedAnswers else { return }
        await decided(decision, pin: current)
    }

    /// Acts on a move decided for `current`, once per decision: follows it, or says why not.
    private func decided(_ decision: PinMoves.Decision, pin current: Pin) async {
        guard decision != (await pin.move) else { return }
        await pin.decided(decision)
        if case .follow(_, let to, _) = decision {
            let moved = current.how == .configured ? await pin.moveConfigured(to: to) : try? await pin.move(to: to)
            guard let moved else { return }
            await follow(moved)
        }
        if let notice = PinMoves.notice(decision, pin: current, configuredFile: pin.configuredFile) { bus.publish(notice) }
    }

    // MARK: One change at a time

    /// Runs a command that may change the pin or the token, in line; a search under way gives up.
    private func command(_ body: () async -> ControlResult) async -> ControlResult {
        asked += 1
        return await inLine(body)
    }

    /// Runs one change after the one before it has ended, in the order they came; when the last
    /// has ended, a search held back meanwhile runs.
    private func inLine<T: Sendable>(_ body: () async -> T) async -> T {
        if changing {
            await withCheckedContinuation { queued.append($0) }
        } else {
            changing = true
        }
        defer {
            if !queued.isEmpty {
                queued.removeFirst().resume()
            } else {
                changing = false
                if searchAgain { askSearch.yield() }
            }
        }
        return await body()
    }

    // MARK: Following

    private func follow(_ pinned: Pin?) async {
        newcomers.forget()
        await pin.decided(.stay)
        pinnedAnswers = true
        reached = false
        await link.follow(pinned)
    }

    /// The refusal when server.url in the config chooses the server.
    private func configDecides() async -> SatelliteError? {
        guard let current = await pin.current(), current.how == .configured else { return nil }
        return SatelliteError(.invalidRequest,
            "server.url in the config is set to \(current.url), and the config decides the server: pair, use and unpin change "
                + "nothing while it is set. Empty server.url in the config and restart the satellite to choose another way.")
    }

    /// Internal for the test that holds a pairing halfway (Bonjour's list without Avahi).
    func seen(_ list: [DiscoveredServer]) async {
        found = list
        if await pin.current() == nil {
            await search()
        } else {
            await reportNewcomers()
        }
    }

    private func heard(_ health: ServerHealth) async {
        guard let current = await pin.current(), health.url == current.url else { return }
        pinnedAnswers = health.reachable != false
        reached = health.reachable == true
        await reportNewcomers()
    }

    /// Names each server that advertises while the pinned one does not answer, once; none is contacted.
    private func reportNewcomers() async {
        await followMove()
        guard let current = await pin.current() else { return }
        for newcomer in newcomers.report(found.map(Self.advertiser), pinned: current, pinnedAnswers: pinnedAnswers) {
            bus.publish(Newcomers.notice(newcomer, pinned: current))
        }
    }

    /// With nothing pinned, checks the servers found in order and pins the first that passes.
    /// One search at a time, none while a change is under way; a change during one makes it run again.
    /// Internal for the test that holds a pairing halfway.
    func search() async {
        guard !searching else {
            searchAgain = true
            return
        }
        searching = true
        defer { searching = false }
        repeat {
            // A change under way: the search waits for it to end, which starts the search again.
            guard !changing else {
                searchAgain = true
                return
            }
            searchAgain = false
            let since = asked
            guard await pin.current() == nil, !found.isEmpty else { return }
            // The token a discovered server is pinned with; one that is no bearer token goes nowhere.
            let inForce: (token: String, kind: TokenKind)?
            do { inForce = try await link.tokenInForce() } catch { return }
            // Right before each vet: no command since the pin and the token were read, so both still hold.
            let chosen = await PinPolicy.firstAccepted(found.map(Self.advertiser)) { candidate in
                guard asked == since else { return .unhealthy }
                switch await link.vet(candidate.url, token: inForce?.token, addresses: announcedAddresses(candidate)) {
                case .success: return .accepted
                case .failure(let error): return error.code == .tokenRefused ? .tokenRefused : .unhealthy
                }
            }
            guard asked == since else {
                searchAgain = true  // a command came: look again once it has ended
                continue
            }
            guard let chosen else { continue }
            // A change in line, like the commands. A command asked for meanwhile: look again after it.
            let pinned: Bool = await inLine {
                guard asked == since else {
                    searchAgain = true
                    return false
                }
                // ServerPin refuses when a pin came some other way meanwhile; that pin stays.
                guard let pinned = try? await pin.pin(url: chosen.url, name: chosen.name, how: .discovered,
                                                      tokenSource: inForce?.kind, addresses: announcedAddresses(chosen),
                                                      instance: chosen.name) else { return false }
                await follow(pinned)
                return true
            }
            if pinned { return }
        } while searchAgain
    }

    /// The addresses Bonjour gives for a found server, as they are pinned (its name is never looked up).
    private func announcedAddresses(_ candidate: PinPolicy.Advertiser) -> [String] {
        guard let server = found.first(where: { $0.name == candidate.name && $0.port == candidate.port }),
              let host = ServerAddress(candidate.url)?.host else { return [] }
        return PinMoves.pinnable(host: host, resolved: server.addresses)
    }

    /// The PinPolicy view of a found server, at the address its `url` uses.
    private static func advertiser(_ server: DiscoveredServer) -> PinPolicy.Advertiser {
        PinPolicy.Advertiser(name: server.name, host: ServerAddress(server.url)?.host ?? server.host, port: server.port)
    }
}
