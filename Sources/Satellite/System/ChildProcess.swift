// Runs a program beside the daemon (the state hook) and learns how it ended.
// Not Foundation's Process: it passes the spawning thread's blocked signals on
// to the child and brings more of Foundation than this needs. Here the child
// starts with no signal blocked and every signal at its default (the daemon
// ignores SIGTERM, SIGINT and SIGPIPE, and ignoring is inherited through exec),
// in a process group of its own so that whatever it starts can be stopped with
// it, with only stdin, stdout and stderr open. It is reaped by waitid on a
// thread of its own (a spare one, SpareThreads), never on the main loop (MainLoop). Easy to get wrong: a
// group must not be signalled once its leader is reaped (the number may be
// reused), so the reaper first waits without reaping, and signals are sent
// under the same lock.
import CSpawn
import Glibc
import Synchronization

/// How a child process ended.
public enum ChildExit: Sendable, Equatable {
    case exited(Int32)
    case signalled(Int32)
}

/// A program started with posix_spawn in a process group of its own.
final class ChildProcess: Sendable {
    let pid: pid_t
    private let state = Mutex(State())

    private struct State {
        var exit: ChildExit?
        var waiters: [CheckedContinuation<ChildExit, Never>] = []
        /// Set once the child is being stopped: what it left running in its group is killed with it.
        var killGroupOnExit = false
    }

    private init(pid: pid_t) {
        self.pid = pid
    }

    /// Starts `executable` with `arguments` (argv, the program's name first) and exactly
    /// `environment`. `input` is written to its standard input, which then closes; its
    /// standard output is /dev/null, its standard error the daemon's (the journal under systemd).
    static func spawn(executable: String, arguments: [String], environment: [String: String],
                      input: [UInt8]) throws(POSIXFailure) -> ChildProcess {
        var pipeEnds: [Int32] = [-1, -1]
        try POSIX.call("pipe") { pipe(&pipeEnds) }
        let (reading, writing) = (pipeEnds[0], pipeEnds[1])
        // The child gets the reading end as its fd 0 (dup2 clears close-on-exec there) and nothing above 2.
        _ = fcntl(reading, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writing, F_SETFD, FD_CLOEXEC)
        defer { close(writing) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, reading, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        close(reading)
        guard spawned == 0 else { throw POSIXFailure("posix_spawn", errno: spawned) }

        // A few hundred bytes: the pipe takes them whether or not the child reads. A child that
        // has already gone is EPIPE (SIGPIPE is ignored), which is no concern of the daemon's.
        _ = fcntl(writing, F_SETFL, O_NONBLOCK)
        input.withUnsafeBytes { bytes in
            guard bytes.count > 0 else { return }
            try? POSIX.writeAll(writing, bytes)
        }

        let child = ChildProcess(pid: pid)
        SpareThreads.shared.run(name: "child-reaper") { child.reap() }
        return child
    }

    /// How the child ended, once it has.
    func exited() async -> ChildExit {
        await withCheckedContinuation { (waiter: CheckedContinuation<ChildExit, Never>) in
            let known = state.withLock { s in
                if s.exit == nil { s.waiters.append(waiter) }
                return s.exit
            }
            if let known { waiter.resume(returning: known) }
        }
    }

    /// Sends `signal` to the child's whole process group, unless it has ended already;
    /// whatever is left in the group when the child ends is then killed too.
    func signalGroup(_ signal: Int32) {
        state.withLock { s in
            guard s.exit == nil else { return }
            s.killGroupOnExit = true
            kill(-pid, signal)
        }
    }

    /// SIGTERM to the group now, and SIGKILL after `grace` if the child has not ended by then.
    func stop(grace: Duration) {
        signalGroup(SIGTERM)
        // A task of its own, not a child of the caller: at shutdown the caller is cancelled, and the
        // grace must still be given; a sleep in a cancelled task ends at once.
        Task { [self] in
            try? await Task.sleep(for: grace)
            signalGroup(SIGKILL)
        }
    }

    /// On the reaper thread: waits for the end without reaping, so the process group cannot be
    /// reused while it is signalled, then reaps and tells the waiters.
    private func reap() {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        let (exit, waiters) = state.withLock { s -> (ChildExit, [CheckedContinuation<ChildExit, Never>]) in
            if s.killGroupOnExit { kill(-pid, SIGKILL) }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            // WIFEXITED, WEXITSTATUS and WTERMSIG are macros Swift cannot import.
            let exit: ChildExit = status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
            s.exit = exit
            defer { s.waiters.removeAll() }
            return (exit, s.waiters)
        }
        for waiter in waiters { waiter.resume(returning: exit) }
    }
}
