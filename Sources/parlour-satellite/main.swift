// parlour-satellite: the daemon. It reads its command line and config, refuses
// to start on a bad config (naming the file and the key), and runs until
// SIGTERM or SIGINT, after which it exits 0 (1 when one of its parts failed).
import Glibc
import Satellite
import SatelliteCore

// Before any task: every task and actor runs on this thread, in its loop (the end of this file).
MainLoop.install()
// Before any thread starts, so that every thread inherits the mask (Signals).
Signals.block([SIGTERM, SIGINT])
// espeak-ng 1.51 (Debian 12) makes a PulseAudio client even to speak into memory,
// which creates ~/.config/pulse (the state folder) and looks for a sound server.
// Pointed at none, it gives up at once and makes nothing (OfflineVoice). Set
// before any thread starts: setenv is not safe while another thread reads the
// environment.
setenv("PULSE_SERVER", "unix:/dev/null", 0)
// libcurl writes every TLS session's secrets to the file SSLKEYLOGFILE names, the token's connections included.
unsetenv("SSLKEYLOGFILE")
let environment = ProcessEnvironment.variables
let journal = Journal(environment: environment)

func fail(_ message: String, code: Int32) -> Never {
    journal.write(JournalRecord(.error, message, fields: ["EVENT": "startup"]))
    exit(code)
}

let options: [String: String]
switch DaemonCommandLine.parse(Array(CommandLine.arguments.dropFirst())) {
case .failure(let usage):
    _ = Array((usage.description + "\n").utf8).withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(2)
case .success(let invocation):
    switch invocation {
    case .help(let text):
        print(text, terminator: text.hasSuffix("\n") ? "" : "\n")
        exit(0)
    case .version(let text):
        print(text)
        exit(0)
    case .run(let given):
        options = given
    }
}

// While /proc/self is still the daemon's own: what the start-up's code is unmapped with, later.
ResidentPages.prepare()
// Before the token is first read: no core file, and no ptrace by another process of this user.
if !CoreDumps.forbid() {
    journal.write(JournalRecord(.warning, "Cannot make the daemon undumpable (prctl PR_SET_DUMPABLE): "
        + "\(String(cString: strerror(errno))). A core file could hold the token.", fields: ["EVENT": "startup"]))
}
let paths = SatellitePaths.resolve(options: options, environment: environment)
var hostName = [UInt8](repeating: 0, count: 256)
gethostname(&hostName, hostName.count)
let loaded: LoadedConfig
do {
    loaded = try ConfigLoader.load(path: paths.config, explicit: paths.configExplicit,
                                   hostName: String(decoding: hostName.prefix { $0 != 0 }, as: UTF8.self))
} catch {
    // EX_CONFIG: the unit does not restart on it; a restart cannot fix a config.
    fail("Cannot start: \(error.description)", code: 78)
}
for warning in loaded.warnings { journal.write(JournalRecord(.warning, warning, fields: ["EVENT": "config"])) }
// The files the config names: the sounds, and the hook's program.
let cues: CueSounds
let hook: HookCommand?
do {
    cues = try CueSounds.load(loaded.config.sounds, configFile: paths.config)
    hook = try HookCommand.load(loaded.config.hooks.onState, configFile: paths.config, searchPath: environment["PATH"])
} catch {
    fail("Cannot start: \(error.description)", code: 78)
}

// The local wake word's engine, only when it is used: the library is not even loaded otherwise.
var wakeWord: WakeWordEngine?
if loaded.config.wake == .local {
    let executable = FileSystem.linkTarget("/proc/self/exe")
    let folder = WakeWordFolder.resolve(environment: environment, executable: executable, exists: FileSystem.exists)
    do {
        wakeWord = try WakeWordEngine.load(loaded.config.wakeWord, folder: folder, configFile: paths.config)
    } catch {
        fail("Cannot start: \(error.description)", code: 78)
    }
}

let daemon = Daemon(config: loaded.config, paths: paths, environment: environment, cues: cues, hook: hook, wakeWord: wakeWord)
Task { () async -> Never in
    let ending: ServiceRunner.Ending
    do throws(SatelliteError) {
        ending = try await daemon.run(journal: journal)
    } catch {
        fail("Cannot start: \(error.message)", code: 1)
    }
    // Everything the daemon owns is closed and written by now. _exit, not exit: exit runs
    // the C libraries' teardown (OpenSSL's among them) while a thread that has not
    // yet wound down (the http or audio thread) may still be inside them, which
    // crashed a test daemon once in a few hundred stops (when libcurl's was such a thread).
    // A part that failed (the journal said which) ends the daemon non-zero, so systemd restarts it.
    if case .failed = ending { _exit(1) }
    _exit(0)
}
MainLoop.run()
