// A device on the house's network that is not of the house: it finds the
// satellites' claim ports as anyone can (avahi-browse, `_parlour-satellite._udp`)
// and sends whatever datagrams it likes to them, again and again, from a
// thread of its own, until told to stop.
import Foundation
import Glibc
import Synchronization

final class Intruder: Sendable {
    /// A satellite's claim port as Bonjour advertises it.
    struct Target: Sendable, CustomStringConvertible {
        let name: String
        let address: String
        let port: UInt16
        let txt: [String: String]
        var description: String { "\(name) at \(address):\(port)" }
    }

    /// Every `_parlour-satellite._udp` instance avahi-browse resolves (IPv4 and global IPv6 addresses),
    /// asked again every 200 ms until each of `names` is among them, for at most `seconds`.
    static func targets(named names: [String], seconds: Double = 15) async throws -> [Target] {
        let until = ContinuousClock.now + .seconds(seconds)
        while true {
            let out = try await Subprocess.check("/usr/bin/avahi-browse", ["-rpt", "_parlour-satellite._udp"])
            let found = out.split(separator: "\n").compactMap(target)
            if Set(names).isSubset(of: Set(found.map(\.name))) || ContinuousClock.now > until { return found }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// A resolved line of `avahi-browse -p`: =;iface;proto;name;type;domain;host;address;port;"k=v" "k=v"
    private static func target(_ line: Substring) -> Target? {
        let fields = line.split(separator: ";", omittingEmptySubsequences: false)
        guard fields.count >= 10, fields[0] == "=", let port = UInt16(fields[8]), !fields[7].hasPrefix("fe80") else { return nil }
        var txt: [String: String] = [:]
        for entry in fields[9...].joined(separator: ";").split(separator: "\" \"") {
            let pair = entry.trimmingCharacters(in: CharacterSet(charactersIn: "\"")).split(separator: "=", maxSplits: 1)
            if pair.count == 2 { txt[String(pair[0])] = String(pair[1]) }
        }
        return Target(name: String(fields[3]), address: String(fields[7]), port: port, txt: txt)
    }

    private let state = Mutex(State())

    private struct State {
        var stopped = false
        var sent = 0
        var over = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    /// Sends each of `datagrams` to each of `targets` every `everyMs` until `stop` (which a test must call).
    init(sending datagrams: [[UInt8]], to targets: [Target], everyMs: Int = 20) {
        let thread = Thread { [self] in
            let v4 = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0), v6 = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue), 0)
            while !self.state.withLock({ $0.stopped }) {
                for target in targets {
                    for datagram in datagrams where Self.send(datagram, to: target, v4: v4, v6: v6) {
                        self.state.withLock { $0.sent += 1 }
                    }
                }
                usleep(UInt32(everyMs * 1000))
            }
            close(v4)
            close(v6)
            let waiter = self.state.withLock { s in
                s.over = true
                return s.waiter.take()
            }
            waiter?.resume()
        }
        thread.name = "intruder"
        thread.start()
    }

    /// How many datagrams went out.
    var count: Int { state.withLock { $0.sent } }

    /// Stops sending, and returns once the thread is done.
    func stop() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let over = state.withLock { s in
                s.stopped = true
                if !s.over { s.waiter = continuation }
                return s.over
            }
            if over { continuation.resume() }
        }
    }

    /// One datagram to `target`; whether the kernel took it.
    static func send(_ datagram: [UInt8], to target: Target, v4: Int32, v6: Int32) -> Bool {
        if target.address.contains(":") {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = target.port.bigEndian
            guard inet_pton(AF_INET6, target.address, &address.sin6_addr) == 1 else { return false }
            return send(datagram, on: v6, to: address)
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = target.port.bigEndian
        guard inet_pton(AF_INET, target.address, &address.sin_addr) == 1 else { return false }
        return send(datagram, on: v4, to: address)
    }

    private static func send<Address>(_ datagram: [UInt8], on fd: Int32, to address: Address) -> Bool {
        withUnsafePointer(to: address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, datagram, datagram.count, 0, $0, socklen_t(MemoryLayout<Address>.size))
            }
        } >= 0
    }
}
