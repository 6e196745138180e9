// A plain UDP socket on loopback for the siblings' tests: it sends what a test
// makes (a claim, a forgery, garbage) to a link's port, as any device on the
// house's network could.
import Glibc

final class UDPPeer: Sendable {
    private let fd: Int32

    init() throws {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
    }

    /// Sends `bytes` to 127.0.0.1:`port`.
    func send(_ bytes: [UInt8], to port: UInt16) throws {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let sent = bytes.withUnsafeBytes { raw in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard sent == bytes.count else { throw TestFailure("sendto: \(String(cString: strerror(errno)))") }
    }

    deinit { close(fd) }
}
