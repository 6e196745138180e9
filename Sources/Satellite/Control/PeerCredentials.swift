// Who is on the other end of the control socket, from the kernel (SO_PEERCRED),
// not from anything the caller says. Glibc hides struct ucred behind
// _GNU_SOURCE, so its three fields are declared here with the same layout.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc

/// The process, user and group of a control socket's peer.
public struct PeerCredentials: Sendable, Equatable {
    public let pid: Int32
    public let uid: UInt32
    public let gid: UInt32

    private struct UCred { var pid: Int32 = 0; var uid: UInt32 = 0; var gid: UInt32 = 0 }

    static func of(_ fd: Int32) -> PeerCredentials? {
        var cred = UCred()
        var length = socklen_t(MemoryLayout<UCred>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) == 0 else { return nil }
        return PeerCredentials(pid: cred.pid, uid: cred.uid, gid: cred.gid)
    }
}
