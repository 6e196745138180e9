// The UDP socket siblings' claims come in on and go out from, and its one
// thread, `siblings`: a poll over the socket and a wake-up pipe, asleep while
// nothing comes. The thread alone touches the socket: what is sent is handed
// to it. Every datagram, with its arrival on CLOCK_MONOTONIC, goes to the
// replay tracker (SiblingClaims); one over SiblingClaim.maxBytes is cut by the
// kernel into a fixed buffer (MSG_TRUNC tells its real length) and refused
// unread, so no datagram costs more memory than that buffer. Nothing is ever
// answered. One IPv6 socket takes IPv4 too (IPV6_V6ONLY off); where the
// machine has no IPv6, an IPv4 socket alone. Refusals reach the journal as
// RefusalReports paces them, never one a datagram.
import Glibc
import SatelliteCore
import Synchronization

/// The arbitration port: claims sent to siblings, and theirs handed to `deliver`'s handler.
final class SiblingLink: @unchecked Sendable {
    /// What is sent, and to whom.
    private typealias Sending = (datagram: [UInt8], siblings: [Sibling])

    /// What doctor reads: the port, and what came in.
    struct Facts: Sendable, Equatable {
        /// The port claims are read on, once bound.
        var port: UInt16?
        /// Why the port could not be bound.
        var failure: POSIXFailure?
        /// Claims taken, since the start.
        var admitted = 0
        /// Datagrams refused, by reason, since the start.
        var refused: [ClaimRefusal: Int] = [:]
        /// Datagrams that came while there was no token, and were not read.
        var ignored = 0
    }

    /// How long before its arrival a claim's wake may lie: a sibling sends as it wakes.
    static let freshnessMs = 1_000
    /// Datagrams read in one turn of the loop, so a flood cannot hold off a send or a stop.
    static let batch = 64

    private let requestedPort: UInt16
    private let bus: EventBus
    private let outbox = Mutex<[Sending]>([])
    private let facts = Mutex(Facts())
    private let keys: Mutex<HouseKeys?>
    private let handlers = Mutex<[@Sendable (HeardClaim) -> Void]>([])
    private let stopping = Atomic<Bool>(false)
    private let wakePipe: WakePipe?
    private let owner = OwnerThread("siblings")

    // Set by `open` before the thread starts; then the thread's alone.
    private var fd: Int32 = -1
    private var family: Int32 = AF_INET6
    private var claims: SiblingClaims?
    private var reports = RefusalReports()

    /// `port` 0 takes any free one. `keys`: the house's, from the token in force (nil: none, no claims sent or taken).
    init(port: Int, keys: HouseKeys?, bus: EventBus) {
        requestedPort = UInt16(clamping: port)
        self.bus = bus
        self.keys = Mutex(keys)
        wakePipe = WakePipe()
    }

    // MARK: Any thread

    /// The port bound, once it is.
    var port: UInt16? { facts.withLock { $0.port } }

    var current: Facts { facts.withLock { $0 } }

    /// The keys claims are made and checked with now.
    var houseKeys: HouseKeys? { keys.withLock { $0 } }

    /// `handle` gets every claim taken, on the link's thread, as it arrives, after the handlers given before it.
    func deliver(to handle: @escaping @Sendable (HeardClaim) -> Void) {
        handlers.withLock { $0.append(handle) }
    }

    /// Sends `datagram` to every address of each of `siblings`, without waiting; one that cannot be reached costs nothing.
    func send(_ datagram: [UInt8], to siblings: [Sibling]) {
        guard !siblings.isEmpty else { return }
        outbox.withLock { $0.append((datagram, siblings)) }
        wakePipe?.wake()
    }

    /// The house's keys after the token changed (nil: no token any more); every datagram read from now on is checked with them.
    func rekey(_ new: HouseKeys?) {
        keys.withLock { $0 = new }
    }

    // MARK: Starting and stopping

    /// Binds the port; the journal says which, or why it could not be.
    @discardableResult
    func open() -> Result<UInt16, POSIXFailure> {
        let result = Self.bind(port: requestedPort)
        switch result {
        case .success(let bound):
            (fd, family) = (bound.fd, bound.family)
            facts.withLock { $0.port = bound.port }
            bus.notice(.info, "Siblings' claims are read on UDP port \(bound.port).", ["port": String(bound.port)])
            return .success(bound.port)
        case .failure(let failure):
            facts.withLock { $0.failure = failure }
            bus.notice(.error, "The arbitration port \(requestedPort) cannot be bound (\(failure)): this satellite answers "
                + "every wake it hears, as if it had no siblings. parlourctl doctor says what to do.",
                       ["port": String(requestedPort), "errno": String(failure.errno)])
            return .failure(failure)
        }
    }

    /// Reads and sends on the link's thread until cancelled, then closes the socket. With no port bound,
    /// only waits to be cancelled.
    func run() async {
        guard fd >= 0, let wakePipe else {
            await Service.untilCancelled()
            return
        }
        let (ended, end) = AsyncStream.makeStream(of: Void.self)
        guard SystemThread.start(name: "siblings", { [self] in
            loop(wakePipe)
            end.finish()
        }) else {
            bus.notice(.error, "Cannot start the siblings' thread: \(String(cString: strerror(errno))).")
            close(fd)
            await Service.untilCancelled()
            return
        }
        await withTaskCancellationHandler {
            for await _ in ended {}
        } onCancel: {
            stopping.store(true, ordering: .relaxed)
            wakePipe.wake()
        }
    }

    // MARK: The link's thread

    private func loop(_ wakePipe: WakePipe) {
        owner.claim()
        let heartbeat = Heartbeat("siblings", serves: "the siblings' claims", bound: .seconds(10)) { wakePipe.wake() }
        defer { heartbeat.ended() }
        // One more byte than a claim may have: what fills it is oversized.
        var buffer = [UInt8](repeating: 0, count: SiblingClaim.maxBytes + 1)
        while !stopping.load(ordering: .relaxed) {
            for sending in outbox.withLock({ waiting in defer { waiting = [] }; return waiting }) {
                send(sending.datagram, sending.siblings)
            }
            receive(into: &buffer)
            let timeout = reportRefusals()
            var polled = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), wakePipe.pollRequest]
            _ = heartbeat.sleeping(timeout: timeout) { poll(&polled, 2, timeout) }
            if polled[1].revents != 0 { wakePipe.drain() }
        }
        close(fd)
    }

    /// Whether there are keys to check claims with now (a token); what was seen and refused outlives a change of them.
    private func keyed() -> Bool {
        owner.assertCurrent()
        guard let keys = houseKeys else { return false }
        if claims == nil { claims = SiblingClaims(keys: keys, freshnessMs: Self.freshnessMs) }
        if claims?.keys != keys { claims?.keys = keys }
        return true
    }

    /// The datagrams waiting, at most a batch of them.
    private func receive(into buffer: inout [UInt8]) {
        owner.assertCurrent()
        for _ in 0..<Self.batch {
            let length = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_TRUNC) | Int32(MSG_DONTWAIT)) }
            if length < 0 {
                if errno == EINTR { continue }
                break
            }
            // With no token, nothing is taken: not even counted as refused.
            let datagram = length > SiblingClaim.maxBytes ? buffer : Array(buffer[..<length])
            guard keyed(), let result = claims?.receive(datagram, arrivedMs: MonotonicClock.nanoseconds() / 1_000_000) else {
                facts.withLock { $0.ignored += 1 }
                continue
            }
            // Counted before it is handed on, so whoever is handed a claim sees every datagram before it counted.
            let refused = claims?.refused ?? [:]
            facts.withLock {
                if case .success = result { $0.admitted += 1 }
                $0.refused = refused
            }
            guard case .success(let heard) = result else { continue }
            // The refusals before it are told (when a report is due) before it is handed on, in the order they came.
            _ = reportRefusals()
            for handle in handlers.withLock({ $0 }) { handle(heard) }
        }
    }

    /// Tells the journal of the refusals when a report is due; poll's timeout until the next one is.
    private func reportRefusals() -> Int32 {
        owner.assertCurrent()
        guard let total = claims?.refused else { return -1 }
        let nowMs = MonotonicClock.nanoseconds() / 1_000_000
        if let new = reports.due(total: total, nowMs: nowMs) {
            var fields = ["port": String(port ?? 0)]
            for (reason, count) in new { fields["refused_\(reason.rawValue)"] = String(count) }
            let count = new.values.reduce(0, +)
            bus.notice(.warning, "Refused \(count) datagram\(count == 1 ? "" : "s") on the arbitration port: \(RefusalReports.text(new)) "
                + "(wrongHouse or forged: a device holds another token).", fields)
        }
        guard let due = reports.dueMs(total: total) else { return -1 }
        return due > nowMs ? Int32(min(due - nowMs, 60_000)) : 0
    }

    private func send(_ datagram: [UInt8], _ siblings: [Sibling]) {
        owner.assertCurrent()
        for sibling in siblings {
            for text in sibling.addresses {
                guard var address = Self.address(text, port: sibling.port, family: family) else { continue }
                _ = datagram.withUnsafeBytes { bytes in
                    withUnsafePointer(to: &address.storage) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL), $0, address.length)
                        }
                    }
                }
            }
        }
    }

    // MARK: Addresses

    /// `text` (numeric, IPv6 with `%scope` when link-local) as a socket of `family` reaches it; nil when it cannot.
    static func address(_ text: String, port: UInt16, family: Int32) -> NameLookup.Address? {
        guard let found = NameLookup.resolve(text, port: Int(port), numeric: true).first else { return nil }
        if found.family == family { return found }
        guard found.family == AF_INET, family == AF_INET6 else { return nil }
        // An IPv4 address, reached through the dual-stack socket as ::ffff:a.b.c.d.
        var v4 = sockaddr_in()
        withUnsafeMutableBytes(of: &v4) { $0.copyBytes(from: withUnsafeBytes(of: found.storage) { Array($0.prefix(MemoryLayout<sockaddr_in>.size)) }) }
        var v6 = sockaddr_in6()
        v6.sin6_family = sa_family_t(AF_INET6)
        v6.sin6_port = v4.sin_port
        withUnsafeMutableBytes(of: &v6.sin6_addr) { bytes in
            bytes[10] = 0xFF
            bytes[11] = 0xFF
            withUnsafeBytes(of: v4.sin_addr) { for i in 0..<4 { bytes[12 + i] = $0[i] } }
        }
        var mapped = NameLookup.Address()
        mapped.family = AF_INET6
        mapped.length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        mapped.text = text
        withUnsafeMutableBytes(of: &mapped.storage) { storage in withUnsafeBytes(of: v6) { storage.copyMemory(from: $0) } }
        return mapped
    }

    /// A bound, non-blocking socket: IPv6 taking IPv4 too, or IPv4 alone where there is no IPv6.
    private static func bind(port: UInt16) -> Result<(fd: Int32, family: Int32, port: UInt16), POSIXFailure> {
        switch bind(family: AF_INET6, port: port) {
        case .success(let bound): return .success(bound)
        case .failure(let failure) where [EAFNOSUPPORT, EADDRNOTAVAIL].contains(failure.errno):
            return bind(family: AF_INET, port: port)
        case .failure(let failure): return .failure(failure)
        }
    }

    private static func bind(family: Int32, port: UInt16) -> Result<(fd: Int32, family: Int32, port: UInt16), POSIXFailure> {
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return .failure(POSIXFailure("socket", errno: errno)) }
        var storage = sockaddr_storage()
        var length: socklen_t
        if family == AF_INET6 {
            var off: Int32 = 0
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_addr = in6addr_any
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeMutableBytes(of: &storage) { storage in withUnsafeBytes(of: address) { storage.copyMemory(from: $0) } }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = INADDR_ANY
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutableBytes(of: &storage) { storage in withUnsafeBytes(of: address) { storage.copyMemory(from: $0) } }
        }
        let bound = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            let failure = POSIXFailure("bind", errno: errno)
            close(fd)
            return .failure(failure)
        }
        let port = family == AF_INET6
            ? withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in6.self).sin6_port }
            : withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in.self).sin_port }
        return .success((fd, family, UInt16(bigEndian: port)))
    }
}
