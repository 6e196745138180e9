// The daemon holds the token in memory, so no core file may hold the daemon:
// PR_SET_DUMPABLE 0 makes the kernel write none (whatever core_pattern says)
// and keeps other processes of the same user from ptrace-ing it or reading its
// /proc/<pid>/mem. The unit's LimitCORE=0 says the same from outside.
import CPrctl
import Glibc

public enum CoreDumps {
    /// Makes this process undumpable. Returns false (errno set) when the kernel refused.
    @discardableResult
    public static func forbid() -> Bool { parlour_set_undumpable() == 0 }
}
