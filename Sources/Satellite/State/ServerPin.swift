// Owns <state>/pin.json: which server the satellite trusts and how it came to.
// The rules are PinPolicy's; this actor keeps the file and says what changed on
// the bus. Easy to get wrong: a broken pin.json must not stop the daemon nor be
// deleted behind the person's back (it is reported, and treated as no pin), and
// server.url in the config always wins. The pin also names its token's place
// (`tokenSource`): a configured server's is the place in force at start, until
// `token set` gives it the state folder's. pin.json is written and fsynced on
// BlockingThread, and the changes go one at a time (`inLine`): a change waits
// for the one before it to be written, so none decides on a pin not yet saved.
import SatelliteCore

/// The pinned server, kept in pin.json.
public actor ServerPin {
    /// pin.json's path.
    public nonisolated let file: String
    private let stateDirectory: String
    private let configuredURL: String?
    private var configuredToken: TokenKind?
    /// What a configured server's name stood for when it first resolved (empty until then), and the
    /// Bonjour instance that announced it there when it answered (nil until one did), kept in
    /// <state>/configured.json, so that a restart does not ask the name again.
    private var configuredAddresses: [String] = []
    private var configuredInstance: String?
    /// configured.json's path.
    public nonisolated let configuredFile: String
    /// The last move of the server in use decided (ServerChooser), for doctor: one that waits
    /// is a person's to make.
    public private(set) var move = PinMoves.Decision.stay
    private let bus: EventBus
    private let now: @Sendable () -> WallTime
    private let startedAt: WallTime
    private var stored: Pin?
    /// A change is being made; the changes waiting for it, in order.
    private var changing = false
    private var queued: [CheckedContinuation<Void, Never>] = []
    /// Where pin.json is written: BlockingThread.local; a test gives one of its own, to hold a save.
    private let thread: BlockingThread

    /// Reads pin.json. A file that cannot be read is reported on the bus and left in place.
    /// `configuredToken` is where a configured server's token is read from.
    public init(stateDirectory: String, configuredURL: String?, configuredToken: TokenKind? = .state, bus: EventBus,
                now: @escaping @Sendable () -> WallTime = WallTime.now) {
        self.init(stateDirectory: stateDirectory, configuredURL: configuredURL, configuredToken: configuredToken, bus: bus,
                  now: now, thread: .local)
    }

    init(stateDirectory: String, configuredURL: String?, configuredToken: TokenKind? = .state, bus: EventBus,
         now: @escaping @Sendable () -> WallTime = WallTime.now, thread: BlockingThread) {
        self.thread = thread
        let file = SatellitePaths.joined(stateDirectory, "pin.json")
        self.file = file
        configuredFile = SatellitePaths.joined(stateDirectory, "configured.json")
        self.stateDirectory = stateDirectory
        self.configuredURL = configuredURL
        self.configuredToken = configuredToken
        self.bus = bus
        self.now = now
        startedAt = now()
        stored = ServerPin.read(file, bus: bus)
        // Addresses found for another server.url than today's are not this one's.
        if let url = configuredURL?.trimmed() {
            (configuredAddresses, configuredInstance) = ServerPin.configuredPlace(of: url, in: configuredFile)
        }
    }

    /// The server in use: the configured one, else the stored pin, else nil (look for one).
    public func current() -> Pin? {
        PinPolicy.serverInUse(configuredURL: configuredURL, stored: stored, now: startedAt, configuredToken: configuredToken,
                              configuredAddresses: configuredAddresses, configuredInstance: configuredInstance)
    }

    /// Looks up the name of a configured server once, until it resolves: from then on it is
    /// reached at those addresses alone, as a pinned server is, and a later answer for the name
    /// elsewhere is never asked. True when it found them now (the Link must follow the pin again).
    public func placeConfigured() async -> Bool {
        guard let url = configuredURL.map({ $0.trimmed() }), !url.isEmpty, configuredAddresses.isEmpty,
              let address = ServerAddress(url), !PinMoves.isAddress(address.host) else { return false }
        let found = PinMoves.pinnable(host: address.host, resolved: await NameLookup.addresses(of: address.host))
        guard configuredAddresses.isEmpty, !found.isEmpty else { return false }
        await keepConfigured(url: url, addresses: found, instance: nil)
        bus.notice(.info, "The configured server \(address.host) is reached at \(found.joined(separator: ", ")) from now on "
                   + "(kept in \(configuredFile); remove it to look the name up again).",
                   ["addresses": found.joined(separator: ",")])
        return true
    }

    /// The configured server followed to `addresses` (PinMoves decided so, and it proved itself there).
    public func moveConfigured(to addresses: [String]) async -> Pin? {
        guard let url = configuredURL.map({ $0.trimmed() }), current()?.how == .configured, !addresses.isEmpty else { return nil }
        await keepConfigured(url: url, addresses: addresses, instance: configuredInstance)
        return current()
    }

    /// Records the Bonjour instance that announces the configured server where it answers, once:
    /// on plain http, only that instance can show where it went (PinMoves).
    public func announcedConfigured(by instance: String) async {
        guard let url = configuredURL.map({ $0.trimmed() }), current()?.how == .configured, configuredInstance == nil,
              !configuredAddresses.isEmpty else { return }
        await keepConfigured(url: url, addresses: configuredAddresses, instance: instance)
        bus.notice(.info, "The configured server \(ServerAddress(url)?.host ?? url) is announced by the Bonjour instance \"\(instance)\": "
                   + "on plain http it is followed only where that instance announces it, as server.followMoves says "
                   + "(kept in \(configuredFile)).", ["instance": instance])
    }

    /// Records where the configured server is, for this run and in configured.json.
    private func keepConfigured(url: String, addresses: [String], instance: String?) async {
        configuredAddresses = addresses
        configuredInstance = instance
        var fields: [String: JSONValue] = ["url": .string(url), "addresses": .array(addresses.map(JSONValue.string))]
        if let instance { fields["instance"] = .string(instance) }
        let placed = JSONValue.object(fields)
        do {
            try await thread.run(throwing: { [stateDirectory, configuredFile, data = Array((placed.text + "\n").utf8)] () throws(AtomicFile.Failure) in
                try AtomicFile.makeFolder(stateDirectory, mode: 0o700)
                try AtomicFile.write(data, to: configuredFile, mode: 0o644)
            })
        } catch {
            // Kept for this run all the same; the next start looks the name up again.
            bus.notice(.warning, error.satelliteError("The configured server's addresses could not be saved").message, ["file": configuredFile])
        }
    }

    /// ServerChooser's latest decision about a move of the server in use.
    public func decided(_ move: PinMoves.Decision) {
        self.move = move
    }

    /// Pins `url` with the token of `tokenSource` (nil: none) and writes pin.json. Refused when
    /// PinPolicy says so or the URL is not http(s) with a host; a name left empty becomes the URL's
    /// host. The caller has made the checks.
    @discardableResult
    public func pin(url: String, name: String, how: PinHow, tokenSource: TokenKind?, key: String? = nil,
                    addresses: [String] = [], instance: String? = nil) async throws(SatelliteError) -> Pin {
        try await inLine { () async throws(SatelliteError) -> Pin in
            if let refusal = PinPolicy.refusalToPin(how: how, configuredURL: configuredURL, stored: stored) { throw refusal }
            let url = url.trimmed()
            guard let address = ServerAddress(url) else {
                throw SatelliteError(.invalidRequest, ServerAddress.problem(url) ?? "")
            }
            let trimmedName = name.trimmed()
            var pin = Pin(url: url, name: trimmedName.isEmpty ? address.host : trimmedName, how: how,
                          pinnedAt: now(), key: key, tokenSource: tokenSource)
            pin.addresses = addresses
            pin.instance = instance
            try await save(pin)
            let keyed = key.map { ", and only while it shows the key \($0)" } ?? ""
            let token = tokenSource.map { "its token is the one in \($0.origin)" } ?? "it gets no token until parlourctl pair or token set"
            var fields = ["server_url": pin.url, "server_name": pin.name, "how": how.rawValue,
                          "token_source": tokenSource?.rawValue ?? "none"]
            if let key { fields["server_key"] = key }
            bus.notice(.notice, "Pinned \(pin.name) at \(pin.url) (\(how.rawValue)): only it gets a request\(keyed), and \(token).", fields)
            return pin
        }
    }

    /// The pinned server followed to `addresses` (PinMoves decided so); nil when nothing is pinned.
    public func move(to addresses: [String]) async throws(SatelliteError) -> Pin? {
        try await inLine { () async throws(SatelliteError) -> Pin? in
            guard var pin = stored, current()?.how != .configured else { return nil }
            pin.addresses = addresses
            try await save(pin)
            return pin
        }
    }

    /// Gives the server in use the token of `kind` (after `token set`). Returns the pin now in use.
    @discardableResult
    public func giveToken(_ kind: TokenKind) async throws(SatelliteError) -> Pin? {
        try await inLine { () async throws(SatelliteError) -> Pin? in
            if PinPolicy.serverInUse(configuredURL: configuredURL, stored: nil, now: startedAt) != nil {
                configuredToken = kind
            } else if var pin = stored, pin.tokenSource != kind {
                pin.tokenSource = kind
                try await save(pin)
            }
            return current()
        }
    }

    private func save(_ pin: Pin) async throws(SatelliteError) {
        do {
            try await thread.run(throwing: { [stateDirectory, file, data = pin.fileData] () throws(AtomicFile.Failure) in
                try AtomicFile.makeFolder(stateDirectory, mode: 0o700)
                try AtomicFile.write(data, to: file, mode: 0o644)
            })
        } catch {
            throw error.satelliteError("The pinned server could not be saved")
        }
        stored = pin
    }

    /// Runs one change after the one before it has ended, in the order they came.
    private func inLine<T: Sendable>(_ body: () async throws(SatelliteError) -> T) async throws(SatelliteError) -> T {
        if changing {
            await withCheckedContinuation { queued.append($0) }
        } else {
            changing = true
        }
        // The next change in line goes on; with none, the way is free.
        defer { if queued.isEmpty { changing = false } else { queued.removeFirst().resume() } }
        return try await body()
    }

    /// Forgets the pin and removes pin.json, broken or not. Returns the pin forgotten, if there was one.
    @discardableResult
    public func unpin() async throws(SatelliteError) -> Pin? {
        try await inLine { () async throws(SatelliteError) -> Pin? in
            let forgotten = stored
            let removed: Bool
            do throws(AtomicFile.Failure) {
                removed = try await thread.run(throwing: { [file] () throws(AtomicFile.Failure) in try AtomicFile.remove(file) })
            } catch {
                throw error.satelliteError("The pinned server could not be forgotten")
            }
            stored = nil
            guard removed else { return nil }
            let what = forgotten.map { "\($0.name) at \($0.url)" } ?? "the unreadable pin in \(file)"
            let next = current().map { "server.url in the config still chooses \($0.url)." } ?? "Looking for a server again."
            bus.notice(.notice, "Unpinned \(what). \(next)", forgotten.map { ["server_url": $0.url] } ?? ["file": file])
            return forgotten
        }
    }

    /// The addresses and instance configured.json keeps for `url`; none when it keeps another URL's,
    /// or is missing or unreadable (the name is then looked up again).
    private static func configuredPlace(of url: String, in file: String) -> (addresses: [String], instance: String?) {
        guard let data = try? FileSystem.read(file), let fields = (try? JSONValue.parse(data))?.objectValue,
              fields["url"]?.stringValue == url, let list = fields["addresses"]?.arrayValue else { return ([], nil) }
        let addresses = list.compactMap(\.stringValue)
        guard addresses.count == list.count, addresses.allSatisfy(PinMoves.isAddress) else { return ([], nil) }
        return (addresses, fields["instance"]?.stringValue)
    }

    /// The stored pin, or nil when there is no file or it cannot be used (then a warning says why).
    private static func read(_ file: String, bus: EventBus) -> Pin? {
        guard let data = try? FileSystem.read(file) else {
            if FileSystem.exists(file) {
                let problem = "it exists but cannot be opened; check its owner and permissions"
                bus.notice(.warning, PinFileError(file: file, problem: problem).description, ["file": file])
            }
            return nil
        }
        do {
            return try Pin.decode(data, file: file)
        } catch {
            bus.notice(.warning, error.description, ["file": file])
            return nil
        }
    }
}
