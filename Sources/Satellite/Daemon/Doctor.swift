// Gathers the facts `parlourctl doctor` judges: it listens to the microphone
// through the capture actor (which owns the device, so nothing is stolen from a
// conversation), asks the actors what they know, and looks at the files and the
// process. DoctorRules turns the facts into checks. Easy to get wrong: the
// microphone of a muted satellite or of a conversation under way is not opened;
// the state folder is tried with a temporary named as AtomicFile names them, so
// a kill in the middle leaves nothing the daemon would not clear.
import Glibc
import SatelliteCore

/// Runs every check of `doctor`.
public struct Doctor: Sendable {
    public struct Parts: Sendable {
        let capture: AudioCapture
        let playback: Playback
        let discovery: Discovery
        let pin: ServerPin
        let link: Link
        let tokens: TokenStore
        let keeper: StateKeeper
        let board: StatusBoard
        /// With `wake` `local`: the engine loaded at start, whose files are checked again.
        let wakeWord: WakeWordEngine?
        /// With `arbitration.enabled`: the siblings' port, the decisions, and who the siblings are.
        let siblings: Siblings?

        public init(capture: AudioCapture, playback: Playback, discovery: Discovery, pin: ServerPin, link: Link,
                    tokens: TokenStore, keeper: StateKeeper, board: StatusBoard, wakeWord: WakeWordEngine? = nil,
                    siblings: Siblings? = nil) {
            self.wakeWord = wakeWord
            self.siblings = siblings
            self.capture = capture
            self.playback = playback
            self.discovery = discovery
            self.pin = pin
            self.link = link
            self.tokens = tokens
            self.keeper = keeper
            self.board = board
        }
    }

    /// The parts that decide with siblings.
    public struct Siblings: Sendable {
        let port: Int
        let link: SiblingLink
        let arbiter: Arbiter
        let roster: any SiblingRoster

        init(port: Int, link: SiblingLink, arbiter: Arbiter, roster: any SiblingRoster) {
            self.port = port
            self.link = link
            self.arbiter = arbiter
            self.roster = roster
        }
    }

    private let parts: Parts
    private let paths: SatellitePaths

    /// How long the microphone is listened to.
    static let listening: Duration = .seconds(1)

    public init(parts: Parts, paths: SatellitePaths) {
        self.parts = parts
        self.paths = paths
    }

    public func run() async -> DoctorReport {
        let user = Self.userName(getuid())
        // The microphone takes a second and the server a round trip: both at once.
        async let microphone = microphoneCheck(user: user)
        async let token = tokenCheck()
        let (tokenFound, certificateRefused) = await token
        let speaker = await speakerCheck(user: user)
        let move = await parts.pin.move
        let inUse = await parts.pin.current().map {
            DoctorRules.InUse(url: $0.url, name: $0.name, how: $0.how, placed: $0.isPlaced, move: move, configuredFile: parts.pin.configuredFile)
        }
        let available = await parts.discovery.available
        let seen = await parts.discovery.servers.map { (name: $0.name, url: $0.url) }
        return DoctorReport([
            await microphone,
            speaker,
            DoctorRules.audioGroup(Self.audioAccess(user: user)),
            DoctorRules.avahi(available: available, inUse: inUse),
            DoctorRules.serverSeen(available: available, seen: seen, inUse: inUse),
            DoctorRules.serverPinned(inUse),
            tokenFound,
            DoctorRules.clock(now: .now(), built: Self.builtAt(), certificateRefused: certificateRefused),
            stateFolderCheck(user: user),
            socketCheck(),
        ] + wakeWordChecks() + (await siblingChecks()))
    }

    // MARK: Siblings

    private func siblingChecks() async -> [DoctorCheck] {
        guard let siblings = parts.siblings else { return [] }
        let link = siblings.link.current
        let decisions = siblings.arbiter.facts
        let facts = DoctorRules.SiblingClaimFacts(
            siblings: await siblings.roster.siblings().map(\.name).sorted(), token: siblings.link.houseKeys != nil, port: link.port,
            fixedPort: siblings.port != 0, admitted: link.admitted, refused: link.refused, ignored: link.ignored, decided: decisions.decidedWithSiblings,
            heard: decisions.heardFromSiblings, silent: decisions.silent)
        return [DoctorRules.arbitrationPort(siblings.port, bound: link.port, failure: link.failure.map { ($0.reason, $0.errno) },
                                            config: paths.config),
                DoctorRules.siblingClaims(facts)]
    }

    // MARK: The local wake word

    /// The library and the model loaded afresh from their files, as a restart would.
    private func wakeWordChecks() -> [DoctorCheck] {
        guard let engine = parts.wakeWord else { return [] }
        let path = engine.model.libraryPath
        let library: TFLiteLibrary
        do throws(TFLiteLibraryError) {
            // dlopen answers from memory for a library already loaded, even one deleted since.
            guard FileSystem.exists(path) else {
                throw TFLiteLibraryError(path: path, problem: "does not exist (the daemon runs on the copy it loaded at start)")
            }
            library = try TFLiteLibrary(path: path)
        } catch {
            return [DoctorRules.wakeWordLibrary(path, version: nil, problem: "TensorFlow Lite's C library \(path) \(error.problem)"),
                    DoctorRules.wakeWordModel(engine.name, manifest: engine.model.manifestPath, config: paths.config,
                                              problem: "It cannot be checked without the library", running: nil)]
        }
        var problem: String?
        do {
            _ = try WakeWordModel(manifestPath: engine.model.manifestPath, library: library)
        } catch {
            problem = error.description
        }
        return [DoctorRules.wakeWordLibrary(path, version: library.versionText, problem: nil),
                DoctorRules.wakeWordModel(engine.name, manifest: engine.model.manifestPath, config: paths.config,
                                          problem: problem, running: parts.board.current.wakeWord)]
    }

    // MARK: Sound

    private func microphoneCheck(user: String) async -> DoctorCheck {
        let device = parts.capture.device
        func check(_ finding: DoctorRules.MicrophoneFinding) -> DoctorCheck {
            DoctorRules.microphone(device: device, config: paths.config, finding, user: user)
        }
        let state = parts.keeper.state
        if parts.board.current.muted || state == .muted { return check(.muted) }
        if [.listening, .thinking, .speaking].contains(state) { return check(.busy(state)) }
        let chunks: AsyncStream<CaptureChunk>
        do {
            chunks = try await parts.capture.listenIn(for: Self.listening)
        } catch {
            return check(.unavailable(reason: error.reason, errno: -error.code))
        }
        var level = SignalLevel()
        for await chunk in chunks {
            switch chunk {
            case .samples(let samples): level.add(samples)
            case .failed(let error): return check(.unavailable(reason: error.reason, errno: -error.code))
            }
        }
        return check(.heard(level))
    }

    private func speakerCheck(user: String) async -> DoctorCheck {
        let device = parts.playback.device
        var failure: (reason: String, errno: Int32)?
        do {
            try await parts.playback.tryOpen()
        } catch {
            failure = (error.reason, -error.code)
        }
        return DoctorRules.speaker(device: device, config: paths.config, error: failure, user: user)
    }

    /// Who this process runs as, and whether it may use /dev/snd.
    static func audioAccess(user: String) -> DoctorRules.AudioAccess {
        let audio = getgrnam("audio").map { $0.pointee.gr_gid }
        var groups = [gid_t](repeating: 0, count: Int(max(getgroups(0, nil), 0)))
        let count = getgroups(Int32(groups.count), &groups)
        groups = Array(groups.prefix(Int(max(count, 0)))) + [getegid()]
        let devices: DoctorRules.AudioAccess.Devices
        if let entries = FileSystem.names(in: "/dev/snd") {
            let denied = entries.sorted().map { "/dev/snd/\($0)" }.first { path in
                var info = stat()
                // Only the device nodes; `by-id` and `by-path` are folders of links.
                guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFCHR else { return false }
                return access(path, R_OK | W_OK) != 0
            }
            devices = denied.map { .denied($0) } ?? .usable
        } else {
            devices = .missing
        }
        return DoctorRules.AudioAccess(user: user, uid: getuid(), inAudioGroup: audio.map(groups.contains) ?? false,
                                       audioGroupExists: audio != nil, devices: devices)
    }

    // MARK: The server

    /// The token's check, and whether the server's certificate was refused for this machine's clock.
    private func tokenCheck() async -> (DoctorCheck, clockWrong: Bool) {
        // The token of the server in use is its pin's place; with none pinned, the one the search would use.
        let inUse = await parts.pin.current()
        let url = inUse?.url
        guard let inUse else { return (DoctorRules.token(source: parts.tokens.inForce(), .noServer, url: nil), false) }
        guard let kind = inUse.tokenSource else { return (DoctorRules.token(source: nil, .noneForServer, url: url), false) }
        let source = parts.tokens.place(kind)
        do {
            guard try parts.tokens.read(kind) != nil else { return (DoctorRules.token(source: nil, .noServer, url: url), false) }
        } catch {
            return (DoctorRules.token(source: source, .unusable(error.message), url: url), false)
        }
        let finding: DoctorRules.TokenFinding
        let problem = await parts.link.check()
        switch problem?.code {
        case nil: finding = .accepted
        case .tokenRefused?: finding = .refused
        case .noServer?: finding = .noServer
        case _?:
            let health = await parts.link.current
            finding = .unchecked(health.reachable == false ? "the server does not answer /health." : "/v1/models did not answer as it should.")
        }
        return (DoctorRules.token(source: source, finding, url: url), problem?.message.hasPrefix(ServerAnswers.clockWrongLead) == true)
    }

    // MARK: The machine

    /// When this program was built, as near as can be told: its file's time.
    static func builtAt() -> WallTime? {
        var info = stat()
        guard stat("/proc/self/exe", &info) == 0 else { return nil }
        return WallTime(seconds: Int64(info.st_mtim.tv_sec))
    }

    private func stateFolderCheck(user: String) -> DoctorCheck {
        let folder = paths.stateDirectory
        do {
            try AtomicFile.checkWritable(folder)
            return DoctorRules.stateFolder(folder, user: user, failure: nil)
        } catch {
            return DoctorRules.stateFolder(folder, user: user, failure: (error.failure.reason, error.failure.errno))
        }
    }

    private func socketCheck() -> DoctorCheck {
        var info = stat()
        guard stat(paths.socket, &info) == 0 else {
            let why = String(cString: strerror(errno))
            return DoctorCheck(.socket, .fail, "\(paths.socket) cannot be looked at (\(why)), though the daemon answered through it.",
                               fix: DoctorRules.restart)
        }
        let group = getgrgid(info.st_gid).map { String(cString: $0.pointee.gr_name) }
        return DoctorRules.socket(paths.socket, mode: Int(info.st_mode & 0o7777), group: group,
                                  parlourGroupExists: getgrnam("parlour") != nil)
    }

    static func userName(_ uid: uid_t) -> String {
        getpwuid(uid).map { String(cString: $0.pointee.pw_name) } ?? String(uid)
    }
}
