// The judgments of `parlourctl doctor`: from what the daemon found (a level, an
// errno, a file mode) to ok, warn or fail, the sentence that says why, and the
// command that fixes it. Pure, so every verdict and every fix is pinned by a
// table test; the daemon only gathers the facts. Easy to get wrong: a fix must
// be a command a person can paste (a `#` comment may explain it), and a fix that
// would not work (pairing again while systemd's credential wins) is worse than none.
import Glibc

/// From facts to checks.
public enum DoctorRules {
    public static let pairFix = "parlourctl pair LINK   # run parlour pair on the server for the link"
    public static let restart = "sudo systemctl restart parlour-satellite"

    // MARK: Sound

    /// What listening to the microphone found.
    public enum MicrophoneFinding: Sendable, Equatable {
        /// The satellite is muted: the microphone stays closed.
        case muted
        /// A conversation is under way in this state: the microphone is not taken from it.
        case busy(SatelliteState)
        /// It could not be opened, or failed; `errno` is positive (EACCES, EBUSY, ENOENT ...).
        case unavailable(reason: String, errno: Int32)
        /// What it heard.
        case heard(SignalLevel)
    }

    public static func microphone(device: String, config: String, _ finding: MicrophoneFinding, user: String) -> DoctorCheck {
        let other = "arecord -L   # then set audio.input in \(config) to a device it lists"
        let mixer = "alsamixer -V capture   # unmute the capture (M) and set its level"
        switch finding {
        case .muted:
            return DoctorCheck(.microphone, .warn, "The satellite is muted, so the microphone was left closed and not tried.",
                               fix: "parlourctl unmute")
        case .busy(let state):
            return DoctorCheck(.microphone, .warn,
                               "A conversation is under way (\(state.rawValue)), so the microphone was not taken from it.",
                               fix: "parlourctl doctor   # again, once the satellite is idle")
        case .unavailable(let reason, let errno):
            return DoctorCheck(.microphone, .fail, "The microphone \(device) cannot be opened: \(reason).",
                               fix: deviceFix(errno: errno, user: user, other: other))
        case .heard(let level):
            let over = "over \(String(printf: "%.1f", Double(level.count) / 16000)) s"
            let figures = "RMS \(dB(level.rmsDBFS)), peak \(dB(level.peakDBFS)) \(over)"
            switch level.verdict {
            case .ok:
                return DoctorCheck(.microphone, .ok, "\(device) hears a signal: \(figures).")
            case .none:
                return DoctorCheck(.microphone, .fail, "The microphone \(device) opened but gave no sound at all.", fix: other)
            case .silent:
                return DoctorCheck(.microphone, .fail,
                    "\(device) gives only zeros (digital silence) \(over): its capture is switched off or muted, or nothing is plugged in.",
                    fix: mixer)
            case .constant:
                return DoctorCheck(.microphone, .fail,
                    "\(device) gives the same value (\(level.constantValue ?? 0)) in every sample \(over): it delivers no sound.",
                    fix: other)
            case .quiet:
                return DoctorCheck(.microphone, .warn, "\(device) barely hears anything: \(figures).", fix: mixer)
            case .clipping:
                let share = Double(level.clipped) * 100 / Double(max(level.count, 1))
                return DoctorCheck(.microphone, .warn,
                    "\(device) clips: \(String(printf: "%.1f", share)) % of the samples are at full scale (\(figures)).",
                    fix: "alsamixer -V capture   # lower the capture level")
            }
        }
    }

    /// `error` is nil when the speaker opened; `errno` is positive.
    public static func speaker(device: String, config: String, error: (reason: String, errno: Int32)?, user: String) -> DoctorCheck {
        guard let error else { return DoctorCheck(.speaker, .ok, "\(device) opens.") }
        return DoctorCheck(.speaker, .fail, "The speaker \(device) cannot be opened: \(error.reason).",
                           fix: deviceFix(errno: error.errno, user: user,
                                          other: "aplay -L   # then set audio.output in \(config) to a device it lists"))
    }

    private static func deviceFix(errno: Int32, user: String, other: String) -> String {
        switch errno {
        case EACCES, EPERM: audioGroupFix(user)
        case EBUSY: "fuser -v /dev/snd/*   # shows what holds the sound card; stop it, or share it through dmix/dsnoop"
        default: other
        }
    }

    static func audioGroupFix(_ user: String) -> String { "sudo usermod -aG audio \(user) && \(restart)" }

    /// Who the daemon runs as and whether it may use the sound devices.
    public struct AudioAccess: Sendable, Equatable {
        public enum Devices: Sendable, Equatable {
            /// There is no /dev/snd: the kernel knows no sound card.
            case missing
            /// Every device under /dev/snd can be opened for reading and writing.
            case usable
            /// This one cannot.
            case denied(String)
        }

        public var user: String
        public var uid: UInt32
        public var inAudioGroup: Bool
        public var audioGroupExists: Bool
        public var devices: Devices

        public init(user: String, uid: UInt32, inAudioGroup: Bool, audioGroupExists: Bool, devices: Devices) {
            self.user = user
            self.uid = uid
            self.inAudioGroup = inAudioGroup
            self.audioGroupExists = audioGroupExists
            self.devices = devices
        }
    }

    public static func audioGroup(_ a: AudioAccess) -> DoctorCheck {
        let noCard = "aplay -l   # lists the sound cards the kernel knows; plug the card or USB microphone in"
        if a.uid == 0 {
            if a.devices == .missing {
                return DoctorCheck(.audioGroup, .warn, "Runs as root, but there is no /dev/snd: the kernel knows no sound card.", fix: noCard)
            }
            return DoctorCheck(.audioGroup, .ok, "Runs as root, which may open any sound device.")
        }
        guard a.audioGroupExists else {
            return DoctorCheck(.audioGroup, .warn, "There is no audio group on this system, so \(a.user) uses /dev/snd by its modes alone.",
                               fix: "sudo groupadd --system audio && sudo usermod -aG audio \(a.user) && \(restart)")
        }
        switch (a.inAudioGroup, a.devices) {
        case (true, .usable):
            return DoctorCheck(.audioGroup, .ok, "Runs as \(a.user), a member of audio; /dev/snd can be opened.")
        case (true, .missing):
            return DoctorCheck(.audioGroup, .warn, "Runs as \(a.user), a member of audio, but there is no /dev/snd: the kernel knows no sound card.",
                               fix: noCard)
        case (true, .denied(let path)):
            return DoctorCheck(.audioGroup, .fail, "Runs as \(a.user), a member of audio, yet \(path) cannot be opened.",
                               fix: "sudo chgrp audio \(path) && sudo chmod g+rw \(path)   # udev normally does this")
        case (false, .usable):
            return DoctorCheck(.audioGroup, .warn,
                               "\(a.user) is not in the audio group; /dev/snd opens now, but only through modes or ACLs that may change.",
                               fix: audioGroupFix(a.user))
        case (false, .missing):
            return DoctorCheck(.audioGroup, .fail, "\(a.user) is not in the audio group (and there is no /dev/snd yet).",
                               fix: audioGroupFix(a.user))
        case (false, .denied(let path)):
            return DoctorCheck(.audioGroup, .fail, "\(a.user) is not in the audio group, so \(path) cannot be opened.",
                               fix: audioGroupFix(a.user))
        }
    }

    // MARK: Finding the server

    /// How the server in use was chosen, as far as doctor needs it.
    public struct InUse: Sendable, Equatable {
        public var url: String
        public var name: String
        public var how: PinHow
        /// Whether the pin says where the server is (Pin.isPlaced): one that does not is sent no token.
        public var placed: Bool
        /// The last move decided for it (a `.wait` is a person's to make), and where a configured
        /// server's addresses are kept (what to remove to look its name up again).
        public var move: PinMoves.Decision
        public var configuredFile: String

        public init(url: String, name: String, how: PinHow, placed: Bool = true, move: PinMoves.Decision = .stay,
                    configuredFile: String = "configured.json") {
            self.url = url
            self.name = name
            self.how = how
            self.placed = placed
            self.move = move
            self.configuredFile = configuredFile
        }
    }

    static let startAvahi = "sudo systemctl enable --now avahi-daemon"

    public static func avahi(available: Bool, inUse: InUse?) -> DoctorCheck {
        if available { return DoctorCheck(.avahi, .ok, "avahi-daemon answers.") }
        if inUse != nil {
            return DoctorCheck(.avahi, .warn, "avahi-daemon does not answer, so no server can be found with Bonjour; the server in use works without it.",
                               fix: startAvahi)
        }
        return DoctorCheck(.avahi, .fail, "avahi-daemon does not answer, so no server can be found with Bonjour.", fix: startAvahi)
    }

    /// `seen`: the servers Bonjour lists, as (name, url).
    public static func serverSeen(available: Bool, seen: [(name: String, url: String)], inUse: InUse?) -> DoctorCheck {
        if !seen.isEmpty {
            let list = seen.map { "\($0.name) at \($0.url)" }.joined(separator: ", ")
            return DoctorCheck(.serverSeen, .ok, "Bonjour sees \(seen.count == 1 ? "one server" : "\(seen.count) servers"): \(list).")
        }
        if !available {
            return DoctorCheck(.serverSeen, inUse == nil ? .fail : .warn, "Bonjour cannot look while avahi-daemon does not answer.",
                               fix: startAvahi)
        }
        switch inUse?.how {
        case .configured?:
            return DoctorCheck(.serverSeen, .ok, "No server is advertised on this network, and none is needed: server.url in the config names one.")
        case nil:
            return DoctorCheck(.serverSeen, .fail,
                               "No Parlour server is advertised on this network: it needs to be on, on the same network, with Parlour running.",
                               fix: pairFix)
        case _?:
            return DoctorCheck(.serverSeen, .warn, "No Parlour server is advertised on this network; the pinned one is used all the same.",
                               fix: "avahi-browse -rt _parlour._tcp   # shows what the network advertises")
        }
    }

    public static func serverPinned(_ inUse: InUse?) -> DoctorCheck {
        guard let inUse else {
            return DoctorCheck(.serverPinned, .fail, "No server is pinned, so the satellite has nobody to talk to.", fix: pairFix)
        }
        let found = inUse.how == .configured
            ? "server.url in the config names \(inUse.url)."
            : "\(inUse.name) at \(inUse.url), pinned (\(inUse.how.rawValue))."
        if !inUse.placed {
            let host = ServerAddress(inUse.url)?.host ?? inUse.url
            return inUse.how == .configured
                ? DoctorCheck(.serverPinned, .fail,
                    "\(found) Its name \(host) has not resolved since the satellite started, so it is sent no token; "
                        + "the satellite looks it up again every server.retryMs.", fix: "getent hosts \(host)   # it must answer with the server's address")
                : DoctorCheck(.serverPinned, .fail,
                    "\(found) The pin holds no address for \(host), so it is sent no token: the name would be looked up "
                        + "afresh for each request, and whoever answered for it would get the token.", fix: "parlourctl use \(inUse.url)")
        }
        if case .wait(let from, let to, let by, let why) = inUse.move {
            return DoctorCheck(.serverPinned, .fail,
                "\(found) It no longer answers at \(from.joined(separator: ", ")), and \(by.says) at "
                    + "\(to.joined(separator: ", ")). It was not followed (\(why)) and nothing was sent there.",
                fix: PinMoves.fix(url: inUse.url, how: inUse.how, configuredFile: inUse.configuredFile))
        }
        guard crossesInClear(inUse.url) else { return DoctorCheck(.serverPinned, .ok, found) }
        let proxy = "once Parlour is behind an https reverse proxy (a self-signed one will do: the satellite pins its key)"
        let fix = inUse.how == .configured
            ? "# set server.url in the config to https://HOST:PORT \(proxy)"
            : "parlourctl use https://HOST:PORT   # \(proxy); or pair again with its https:// link"
        return DoctorCheck(.serverPinned, .warn,
            "\(found) It is plain http, so the token crosses the network in clear: whoever can listen on the network can "
                + "read it, and it opens the whole house.", fix: fix)
    }

    /// Whether requests to `url` cross the network unencrypted: plain http to anything but this machine.
    static func crossesInClear(_ url: String) -> Bool {
        guard let address = ServerAddress(url), address.scheme == "http" else { return false }
        let host = address.host.lowercased()
        return !(host == "localhost" || host == "::1" || host.hasPrefix("127."))
    }

    /// What asking the server with the token found.
    public enum TokenFinding: Sendable, Equatable {
        /// There is no server to ask.
        case noServer
        case accepted
        case refused
        /// The server did not answer, or answered with something else; the message says what.
        case unchecked(String)
        /// The server in use was pinned without a token (`use` moved to another origin).
        case noneForServer
        /// What the token's place holds is not a bearer token; the message says why.
        case unusable(String)
    }

    /// `source` is where the token of the server in use (`url`) comes from (with none pinned, the
    /// first place holding one), nil when there is none.
    public static func token(source: TokenSource?, _ finding: TokenFinding, url: String?) -> DoctorCheck {
        if finding == .noneForServer {
            return DoctorCheck(.token, .fail,
                "\(url ?? "The server in use") was pinned with parlourctl use away from the server the token belongs to, "
                    + "so it gets no token and will refuse requests.",
                fix: "parlourctl pair LINK   # with a link from parlour pair on that server; or: parlourctl token set < token-file")
        }
        guard let source else {
            return DoctorCheck(.token, .fail, "There is no token, so no server will take a request from this satellite.", fix: pairFix)
        }
        let from = "from \(source)"
        switch finding {
        case .noServer:
            return DoctorCheck(.token, .warn, "There is a token (\(from)), but no server to check it with.", fix: pairFix)
        case .accepted:
            return DoctorCheck(.token, .ok, "The token (\(from)) goes to \(url ?? "the server") alone, and /v1/models took it.")
        case .noneForServer:
            return DoctorCheck(.token, .fail, "\(url ?? "The server in use") gets no token.", fix: pairFix)
        case .unusable(let why):
            return DoctorCheck(.token, .fail, why, fix: "parlourctl token set < token-file   # the token alone, on one line")
        case .refused:
            // This server was pinned with systemd's credential: the file LoadCredential names holds its token.
            let fix = source.isCredential
                ? "systemctl cat parlour-satellite | grep LoadCredential   # this server's token comes from the file it names: "
                    + "put the right token there, then \(restart) (or pair, which gives it the link's token)"
                : pairFix
            return DoctorCheck(.token, .fail, "\(url ?? "The server") refused the token (\(from)).", fix: fix)
        case .unchecked(let why):
            return DoctorCheck(.token, .warn, "The token (\(from)) could not be checked: \(why)",
                               fix: "curl -sS \(url ?? "SERVER")/health   # is the server running, and reachable from here?")
        }
    }

    // MARK: The machine

    /// `built`: when this program was built (its file's time), if known. `certificateRefused`: the https
    /// server's certificate was found not valid yet by this clock (`ServerAnswers.clockWrong`).
    public static func clock(now: WallTime, built: WallTime?, certificateRefused: Bool = false) -> DoctorCheck {
        let shown = now.iso8601
        let fix = "sudo timedatectl set-ntp true   # then timedatectl status should say: System clock synchronized: yes"
        if now < WallTime.earliest {
            return DoctorCheck(.clock, .fail, "The clock says \(shown), before 2024: TLS certificates and the server's answers will look wrong.", fix: fix)
        }
        if let built, !now.isSet(built: built) {
            return DoctorCheck(.clock, .fail, "The clock says \(shown), before this program was built (\(built.iso8601)).", fix: fix)
        }
        if certificateRefused {
            return DoctorCheck(.clock, .fail, "The clock says \(shown), and by that date the server's certificate is not valid yet: "
                + "the clock is behind, not the server at fault.", fix: fix)
        }
        return DoctorCheck(.clock, .ok, "The clock says \(shown).")
    }

    /// `failure` is nil when a file could be made and removed there; `errno` is positive.
    public static func stateFolder(_ path: String, user: String, failure: (reason: String, errno: Int32)?) -> DoctorCheck {
        guard let failure else { return DoctorCheck(.stateFolder, .ok, "\(path) is writable.") }
        let detail = "\(path) cannot be written (\(failure.reason)), so pairing and token set would fail."
        if failure.errno == EROFS {
            return DoctorCheck(.stateFolder, .fail, detail,
                               fix: "findmnt -T \(path)   # it is on a read-only file system: remount that read-write, or give another --state-dir")
        }
        return DoctorCheck(.stateFolder, .fail, detail, fix: "sudo install -d -m 0700 -o \(user) \(path) && \(restart)")
    }

    /// `mode` holds the permission bits; `group` is the socket's group name, nil when it has none.
    public static func socket(_ path: String, mode: Int, group: String?, parlourGroupExists: Bool) -> DoctorCheck {
        let fix = "sudo chgrp parlour \(path) && sudo chmod 0660 \(path)   # or restart the unit, which sets both"
        let shown = "mode \(String(mode, radix: 8).leftPadded(to: 4)), group \(group ?? "?")"
        if mode & 0o007 != 0 {
            return DoctorCheck(.socket, .fail, "\(path) is \(shown): anyone on this machine may control the satellite.", fix: fix)
        }
        guard parlourGroupExists else {
            return DoctorCheck(.socket, .warn, "\(path) is \(shown); there is no parlour group, so only its owner and root may use parlourctl.",
                               fix: "sudo groupadd --system parlour && \(restart)")
        }
        guard mode == 0o660, group == "parlour" else {
            return DoctorCheck(.socket, .warn, "\(path) is \(shown), not mode 0660, group parlour.", fix: fix)
        }
        return DoctorCheck(.socket, .ok, "\(path) is mode 0660, group parlour: root and the parlour group may use parlourctl.")
    }

    /// TensorFlow Lite's C library for the local wake word: `problem` is why it cannot be loaded now.
    public static func wakeWordLibrary(_ path: String, version: String?, problem: String?) -> DoctorCheck {
        guard let problem else {
            return DoctorCheck(.wakeWordLibrary, .ok, "TensorFlow Lite \(version ?? "?") loads from \(path).")
        }
        return DoctorCheck(.wakeWordLibrary, .fail, "\(problem).",
                           fix: "sudo apt install --reinstall parlour-satellite   # in a source tree: scripts/deps, which fetches it into .build/wakeword")
    }

    /// The local wake word's model: `problem` is why it cannot be loaded now, `running` what the
    /// daemon's own copy says (a model that failed while hearing).
    public static func wakeWordModel(_ model: String, manifest: String, config: String, problem: String?,
                                     running: WakeWordHealth?) -> DoctorCheck {
        let shipped = WakeWordFolder.shippedModels.contains(model)
        let fix = shipped
            ? "sudo apt install --reinstall parlour-satellite   # it ships \(manifest)"
            : "sudoedit \(config)   # point wakeWord.model at a microWakeWord manifest (.json, its .tflite beside it), or \"okay_nabu\"; then \(restart)"
        if let problem { return DoctorCheck(.wakeWordModel, .fail, "\(problem).", fix: fix) }
        if running?.ok == false {
            return DoctorCheck(.wakeWordModel, .fail, "The wake word model \(model) stopped working: \(running?.error ?? "unknown reason"); nothing wakes the satellite now.",
                               fix: restart)
        }
        return DoctorCheck(.wakeWordModel, .ok, "Listening for the wake word with \(model) (\(manifest)).")
    }

    /// `-31.0 dBFS`.
    static func dB(_ value: Double) -> String { String(printf: "%.1f dBFS", SignalLevel.rounded(value)) }
}

extension TokenSource {
    /// Whether this is systemd's credential, which wins over anything pairing stores.
    var isCredential: Bool {
        kind == .credential
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
