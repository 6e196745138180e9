// What an eavesdropper on the house's network overhears: every UDP datagram
// delivered in the test namespace (raw IPv4 and IPv6 sockets of protocol UDP
// get a copy of each, as root), kept when it reads as a claim of `keys`' house.
// A test replays them, or alters them, to prove the satellites refuse both.
import Foundation
import Glibc
import Synchronization
import SatelliteCore

final class ClaimTap: Sendable {
    /// A claim as it went over the wire, and what it says.
    struct Heard: Sendable {
        let datagram: [UInt8]
        let claim: SiblingClaim
    }

    private let keys: HouseKeys
    private let state = Mutex(State())

    private struct State {
        var heard: [Heard] = []
        var stopped = false
    }

    /// Listens from now on; throws when the raw sockets cannot be had (not root).
    init(keys: HouseKeys) throws {
        self.keys = keys
        for family in [AF_INET, AF_INET6] {
            let fd = socket(family, Int32(SOCK_RAW.rawValue), Int32(IPPROTO_UDP))
            guard fd >= 0 else { throw TestFailure("raw UDP socket: \(String(cString: strerror(errno))) (the house tests run as root)") }
            var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let thread = Thread { [self] in self.read(fd, ipHeader: family == AF_INET) }
            thread.name = "claim-tap"
            thread.start()
        }
    }

    /// The claims overheard so far, oldest first, each once (a datagram to the sender's own address is seen once).
    var heard: [Heard] { state.withLock { $0.heard } }

    /// Stops listening (within 100 ms); a test must call it.
    func stop() { state.withLock { $0.stopped = true } }

    private func read(_ fd: Int32, ipHeader: Bool) {
        var buffer = [UInt8](repeating: 0, count: 2048)
        while !state.withLock({ $0.stopped }) {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { continue }
            // IPv4 raw sockets get the IP header; IPv6 ones start at the UDP header.
            let start = (ipHeader ? Int(buffer[0] & 0x0F) * 4 : 0) + 8
            guard n > start else { continue }
            let datagram = Array(buffer[start..<n])
            guard case .success(let claim) = SiblingClaim.decode(datagram, keys: keys) else { continue }
            state.withLock { s in
                if !s.heard.contains(where: { $0.datagram == datagram }) { s.heard.append(Heard(datagram: datagram, claim: claim)) }
            }
        }
        close(fd)
    }
}
