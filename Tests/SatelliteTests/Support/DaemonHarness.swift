// A real parlour-satellite process for a test: its own config, state folder,
// socket, notify socket and ALSA devices (the paced test card under the file
// plugin, from ALSAFixture: the microphone reads mic.raw at real time, the
// speaker writes played.raw). start() returns when the daemon sends READY=1,
// and throws when it exits first or the test is cancelled, so it never hangs on
// a daemon that died. A daemon is killed when its harness goes away, so a test
// that fails half-way leaves no process behind.
// Under `DaemonHarness.$uptime.withValue(seconds)` the daemon runs in a time
// namespace of its own (`unshare --time --fork`), on a machine that seems to have
// been up that long: CLOCK_MONOTONIC and CLOCK_BOOTTIME start there; the wall
// clock is untouched.
// A test hears only what it asks for: unless its config names `sounds` or
// `offline`, the cue sounds and the offline notice are switched off.
import Foundation
import TestSupport
import Synchronization
import SatelliteCore

final class DaemonHarness: Sendable {
    let dir: URL
    let notify: NotifySocket
    let socket: String
    let stateDirectory: String
    let environment: [String: String]
    private let process: Process
    private let stderrURL: URL
    /// With `fifoMic`: the room the test speaks into.
    let room: MicFeeder?
    private let exits: AsyncStream<Int32>
    private let exitStatus = Mutex<Int32?>(nil)

    /// Seconds the daemons started in this task see the machine as up (nil: its real uptime).
    @TaskLocal static var uptime: Int?

    var micFile: URL { dir.appendingPathComponent("mic.raw") }
    var speakerFile: URL { dir.appendingPathComponent("played.raw") }
    /// With "testspeakerlog": everything played, in order.
    func playedInOrder() throws -> [Int16] { try ALSAFixture.shared().playedInOrder(speakerFile.path) }

    /// What the "testspeaker" played from its first sound to its last: a speaker kept open while the
    /// echo is cancelled plays silence before and after.
    func playedSound() throws -> [Int16] {
        let played = Speech.samples(try Data(contentsOf: speakerFile))
        guard let first = played.firstIndex(where: { $0 != 0 }), let last = played.lastIndex(where: { $0 != 0 }) else { return [] }
        return Array(played[first...last])
    }

    /// `playedSound()` cut where the speaker was silent for `gapMs` or more: each answer or cue alone,
    /// when a speaker kept open played them all into one file.
    func playedSounds(gapMs: Int = 200) throws -> [[Int16]] {
        let gap = gapMs * 16
        var sounds: [[Int16]] = [], current: [Int16] = [], zeros = 0
        for sample in try playedSound() {
            zeros = sample == 0 ? zeros + 1 : 0
            current.append(sample)
            if zeros == gap {
                sounds.append(Array(current.dropLast(gap)))
                current = []
            } else if zeros > gap {
                current.removeLast()
            }
        }
        if !current.isEmpty { sounds.append(current) }
        return sounds.filter { !$0.isEmpty }
    }

    /// Starts the daemon with `config` (written to satellite.json) and waits for READY=1.
    /// With `journal`, stderr counts as the journal (JOURNAL_STREAM names it), so records go to journald's socket.
    /// With `fifoMic`, "testmic" reads a FIFO kept full of silence at real time, and `room.say` speaks into it;
    /// with `liveMic` instead, the room goes on at real time while the microphone is closed (MicFeeder `live`);
    /// with `timedMic` too, what is said is heard a steady lead after it was said (MicFeeder `timed`).
    /// "testspeakerlog" is "testspeaker" keeping every playback: `playedInOrder` reads them all.
    static func start(config: JSONValue, token: String? = nil, mic: Data = Data(), fifoMic: Bool = false, liveMic: Bool = false, timedMic: Bool = false,
                      journal: Bool = false, environment extra: [String: String] = [:]) async throws -> DaemonHarness {
        let dir = try Package.temporaryDirectory("sat")
        try mic.write(to: dir.appendingPathComponent("mic.raw"))
        // "testmic" and "testspeaker" in the config mean this daemon's own files on the paced test card.
        let alsa = try ALSAFixture.shared()
        let room = fifoMic || liveMic ? try MicFeeder(path: dir.path + "/mic.fifo", live: liveMic, timed: timedMic) : nil
        var config = config
        if case .object(var fields) = config, case .object(var audio)? = fields["audio"] {
            if audio["input"] == "testmic" { audio["input"] = .string(alsa.microphone(infile: room?.path ?? dir.path + "/mic.raw")) }
            if audio["output"] == "testspeaker" { audio["output"] = .string(alsa.speaker(file: dir.path + "/played.raw")) }
            if audio["output"] == "testspeakerlog" { audio["output"] = .string(alsa.speakerLog(file: dir.path + "/played.raw")) }
            fields["audio"] = .object(audio)
            config = .object(fields)
        }
        if case .object(var fields) = config {
            if fields["sounds"] == nil { fields["sounds"] = ["awake": "", "done": "", "error": ""] }
            if fields["offline"] == nil { fields["offline"] = ["speak": false] }
            config = .object(fields)
        }
        try config.prettyText.write(to: dir.appendingPathComponent("satellite.json"), atomically: true, encoding: .utf8)
        let state = dir.appendingPathComponent("state").path
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        if let token { try (token + "\n").write(toFile: state + "/token", atomically: true, encoding: .utf8) }
        var environment = ProcessInfo.processInfo.environment
        for key in ["PARLOUR_TOKEN", "JOURNAL_STREAM", "STATE_DIRECTORY", "RUNTIME_DIRECTORY", "CREDENTIALS_DIRECTORY",
                    "WATCHDOG_USEC", "WATCHDOG_PID"] {
            environment.removeValue(forKey: key)
        }
        environment["ALSA_CONFIG_PATH"] = ProcessInfo.processInfo.environment["ALSA_CONFIG_PATH"]
        environment["PARLOUR_SATELLITE_CONFIG"] = dir.appendingPathComponent("satellite.json").path
        environment["PARLOUR_SATELLITE_STATE"] = state
        environment["PARLOUR_SATELLITE_SOCKET"] = dir.appendingPathComponent("control.sock").path
        environment.merge(extra) { _, new in new }
        return try await launch(dir: dir, state: state, environment: environment, journal: journal, room: room)
    }

    /// Starts a daemon in `dir` with `environment` (a notify socket of its own is added).
    private static func launch(dir: URL, state: String, environment: [String: String], journal: Bool,
                               room: MicFeeder?) async throws -> DaemonHarness {
        let notify = try NotifySocket(path: dir.appendingPathComponent("notify-\(UUID().uuidString.prefix(6)).sock").path)
        var environment = environment
        environment["NOTIFY_SOCKET"] = notify.path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Package.binDirectory + "/parlour-satellite")
        if let uptime {
            // unshare forks the daemon into the namespace and waits, ending as it ends (with its status, or
            // its signal); signals go to the daemon itself (`pid`), as unshare holds SIGTERM while it waits.
            process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
            process.arguments = ["--time", "--monotonic", String(uptime), "--boottime", String(uptime), "--fork",
                                 "--kill-child=SIGKILL", Package.binDirectory + "/parlour-satellite"]
        }
        process.environment = environment
        let stderrURL = dir.appendingPathComponent("stderr.log")
        if !FileManager.default.fileExists(atPath: stderrURL.path) {
            _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        }
        if journal {
            var st = stat()
            stat(stderrURL.path, &st)
            environment["JOURNAL_STREAM"] = "\(st.st_dev):\(st.st_ino)"
            process.environment = environment
        }
        let stderrHandle = try FileHandle(forWritingTo: stderrURL)
        try stderrHandle.seekToEnd()  // a restarted daemon appends to the same log
        process.standardError = stderrHandle
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        // Set before run(), so the exit is seen however early it comes.
        let (exits, exited) = AsyncStream.makeStream(of: Int32.self, bufferingPolicy: .bufferingNewest(1))
        process.terminationHandler = {
            exited.yield($0.terminationStatus)
            notify.post("EXITED=\($0.terminationStatus)")
        }
        try process.run()
        TestChildren.tie(process)
        let harness = DaemonHarness(dir: dir, notify: notify, socket: environment["PARLOUR_SATELLITE_SOCKET"]!,
                                    stateDirectory: state, environment: environment, process: process, stderrURL: stderrURL,
                                    exits: exits, room: room)
        switch await notify.first(of: ["READY=1", "EXITED="]) {
        case "READY=1"?:
            return harness
        case let exited?:
            let tail = harness.stderr.split(separator: "\n").suffix(5).joined(separator: "\n")
            throw TestFailure("parlour-satellite ended (\(exited)) before READY=1; its stderr ends:\n\(tail)")
        case nil:
            // Cancelled (a bounded wait gave up on it): what it said, to tell why it was never ready.
            print("parlour-satellite was not ready when its start was cancelled; its stderr:\n\(harness.stderr)")
            throw CancellationError()  // the harness goes, and the daemon with it
        }
    }

    private init(dir: URL, notify: NotifySocket, socket: String, stateDirectory: String, environment: [String: String],
                 process: Process, stderrURL: URL, exits: AsyncStream<Int32>, room: MicFeeder?) {
        self.exits = exits
        self.dir = dir
        self.notify = notify
        self.socket = socket
        self.stateDirectory = stateDirectory
        self.environment = environment
        self.process = process
        self.stderrURL = stderrURL
        self.room = room
    }

    /// parlourctl's environment: the daemon's, without what was preloaded into the daemon alone (FakeWallClock).
    private var ctlEnvironment: [String: String] { environment.filter { $0.key != "LD_PRELOAD" } }

    /// Runs parlourctl against this daemon.
    func ctl(_ arguments: String..., input: String? = nil) async throws -> Finished {
        try await Subprocess.run(Package.binDirectory + "/parlourctl", arguments, environment: ctlEnvironment, input: input)
    }

    /// Runs `parlourctl ARGS` with its standard input held open until `release` returns.
    func ctl(_ arguments: String..., holdingInputUntil release: @escaping @Sendable () async -> Void) async throws -> Finished {
        try await Subprocess.run(Package.binDirectory + "/parlourctl", arguments, environment: ctlEnvironment, holdingInputUntil: release)
    }

    /// The result object of `parlourctl --json ARGS`.
    func result(_ arguments: String...) async throws -> JSONValue {
        let done = try await Subprocess.run(Package.binDirectory + "/parlourctl", ["--json"] + arguments, environment: ctlEnvironment)
        return try JSONValue.parse(done.out)
    }

    var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    var isRunning: Bool { process.isRunning }

    /// The daemon's process: unshare's child under `uptime`.
    var pid: Int32 {
        let launched = process.processIdentifier
        guard process.executableURL?.lastPathComponent == "unshare" else { return launched }
        let children = (try? String(contentsOfFile: "/proc/\(launched)/task/\(launched)/children", encoding: .utf8)) ?? ""
        return children.split(separator: " ").first.flatMap { Int32($0) } ?? launched
    }

    /// The files the daemon holds open now, from /proc (a device it released is not among them).
    var openFiles: [String] {
        let folder = "/proc/\(pid)/fd"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\($0)") }
    }

    /// Kills the daemon with SIGKILL (no chance to tidy up) and awaits its end.
    func kill9() async {
        if process.isRunning { kill(pid, SIGKILL) }
        await stop()
    }

    /// A new daemon process on the same config, state folder, socket and stderr log, once this one has ended.
    func restart() async throws -> DaemonHarness {
        // JOURNAL_STREAM, if any, carries over: the log file is the same.
        try await DaemonHarness.launch(dir: dir, state: stateDirectory, environment: environment, journal: false, room: room)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        notify.close()
        room?.stop()
    }

    /// Sends SIGTERM and returns the exit status.
    @discardableResult
    func stop() async -> Int32 {
        room?.stop()
        if let known = exitStatus.withLock({ $0 }) { return known }
        if process.isRunning { kill(pid, SIGTERM) }
        var status: Int32 = -1
        for await code in exits {
            status = code
            break
        }
        exitStatus.withLock { $0 = status }
        notify.close()
        return status
    }
}
