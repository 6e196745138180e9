// The control socket's address as the kernel takes it. Both programs bind or
// connect to a path, and sockaddr_un has room for 107 bytes of it: a longer
// path must be refused, never cut short (it would name another file).
import Glibc

/// A filesystem path as a Unix socket address.
public struct UnixSocketAddress {
    private var address = sockaddr_un()

    /// Nil when `path` does not fit in sockaddr_un.
    public init?(_ path: String) {
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
    }

    /// Calls bind, connect or the like with the address and its length.
    public func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
