// Who is on the other end of the control socket, from the kernel (SO_PEERCRED
// and SO_PEERGROUPS, both taken when the peer connected), not from anything the
// caller says. The groups come from the socket too, not from /proc/<pid>: the
// hardened unit hides other users' processes, and a pid can be reused. Glibc
// hides struct ucred behind _GNU_SOURCE, so its three fields are declared here
// with the same layout.
import Glibc
import SatelliteCore

/// Reads a control socket peer's credentials.
enum PeerCredentials {
    private struct UCred { var pid: Int32 = 0; var uid: UInt32 = 0; var gid: UInt32 = 0 }

    /// The peer of the connected socket `fd`, or nil when the kernel does not say.
    static func of(_ fd: Int32) -> AccessPolicy.Peer? {
        var cred = UCred()
        var length = socklen_t(MemoryLayout<UCred>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) == 0 else { return nil }
        // The user's name is not looked up here: the control loop must not wait on the user database.
        return AccessPolicy.Peer(pid: cred.pid, uid: cred.uid, gid: cred.gid, groups: groups(fd) ?? [])
    }

    /// The peer's supplementary groups; nil when the kernel cannot say (before Linux 4.13).
    static func groups(_ fd: Int32) -> [UInt32]? {
        var groups = [gid_t](repeating: 0, count: 64)
        while true {
            var length = socklen_t(groups.count * MemoryLayout<gid_t>.size)
            if getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, &groups, &length) == 0 {
                return Array(groups.prefix(Int(length) / MemoryLayout<gid_t>.size))
            }
            // ERANGE: the length says how much room the list needs.
            guard errno == ERANGE, Int(length) > groups.count * MemoryLayout<gid_t>.size else { return nil }
            groups = [gid_t](repeating: 0, count: Int(length) / MemoryLayout<gid_t>.size)
        }
    }

    /// The user database's name for `uid`, if it has one.
    static func userName(_ uid: UInt32) -> String? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil, let name = entry.pw_name else {
            return nil
        }
        return String(cString: name)
    }
}
