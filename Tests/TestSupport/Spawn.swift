// Runs a short-lived tool (espeak-ng, sox, cc) for a test and waits for it with
// waitpid. Not Foundation's Process: its waitUntilExit needs another thread to
// deliver the exit, and with the two threads async tests get on this machine,
// two tests waiting at once deadlocked the whole run. The child also starts with
// no signals blocked, whatever the spawning thread had blocked.
import Foundation

public enum Spawn {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs `tool` (looked up in PATH) to its end; throws with its stderr when it fails,
    /// and with the Debian package to install when it is not there.
    public static func run(_ tool: String, package: String, _ arguments: [String]) throws {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        guard let executable = directories.map({ "\($0)/\(tool)" }).first(where: FileManager.default.isExecutableFile) else {
            throw Failure(description: "\(tool) is not installed; these tests need it: apt-get install \(package)")
        }
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("spawn-\(UUID().uuidString).err").path
        defer { unlink(errors) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard spawned == 0 else { throw Failure(description: "cannot start \(tool): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED and WEXITSTATUS are macros Swift cannot import.
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        guard exited && code == 0 else {
            let message = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            throw Failure(description: "\(tool) \(arguments.joined(separator: " ")) failed (status \(status)): \(message)")
        }
    }
}
