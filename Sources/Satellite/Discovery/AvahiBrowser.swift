// The only importer of libavahi-client: browses and resolves one service type on
// Avahi's own thread, advertises this satellite under it when asked, and hands
// out plain Swift events. Easy to get wrong: the client must outlive neither its
// poll nor the daemon (a restarted avahi-daemon means a new client, and the
// advertisement is made again with it), and a C callback must never await or block.
import CAvahi
import Glibc
import Synchronization
import SatelliteCore

/// Browses one DNS-SD service type on every interface, over IPv4 and IPv6, and
/// resolves what it finds, with libavahi-client under an `AvahiThreadedPoll`.
///
/// Threads: between `start()` and `stop()` the client, the service browser, the
/// resolvers, the entry group and the reconnect timer are touched only by the
/// poll thread, in Avahi's callbacks (which run holding the poll's lock). No
/// other thread calls into Avahi meanwhile (`advertise` leaves its wish and wakes
/// the poll thread through a pipe: Avahi's calls wait on D-Bus, and its caller
/// must not), so none needs `avahi_threaded_poll_lock`; `stop()` stops and joins
/// the poll thread before it frees anything. Callbacks copy every C string into
/// Swift values and `yield` them to `events`, which never blocks.
///
/// The client is made with `AVAHI_CLIENT_NO_FAIL`, so it waits for an absent
/// daemon; when the daemon goes away the client fails with
/// `AVAHI_ERR_DISCONNECTED` and is replaced by a new one that waits again. When
/// even the D-Bus system bus is missing, making a client is retried with back-off.
public final class AvahiBrowser: @unchecked Sendable {
    /// One browse result: a service instance as seen on one interface over one protocol.
    public struct Record: Sendable, Hashable {
        public var interface: Int32
        public var proto: Int32
        public var name: String
        public var type: String
        public var domain: String
    }

    public enum Event: Sendable, Equatable {
        /// A record resolved: its host, port, address and TXT record; `own` when this browser's own
        /// advertisement (Avahi's AVAHI_LOOKUP_RESULT_OUR_OWN: its client's, not merely this host's).
        /// With `follow`, found again each time the record changes (a new TXT record).
        case found(DiscoveredServer, record: Record, own: Bool)
        /// The record is gone (the service said goodbye or its records expired).
        case removed(Record)
        /// Whether avahi-daemon serves this client; when it does not, why, if known.
        /// After `false`, every record found before is gone with the old client.
        case daemonAvailable(Bool, reason: AvahiError? = nil)
        /// Something Avahi refused that is worth a journal line.
        case failed(AvahiError)
        /// The name `advertise` is announced under now, after any rename on a clash; nil when withdrawn.
        case advertised(String?)
        /// The record is browsed but does not resolve (its host's address does not come, and Avahi gave up
        /// after a few seconds): said once, and tried again at growing gaps until it resolves or goes.
        case unresolved(Record, AvahiError)
    }

    /// A service to announce under the browser's type.
    public struct Advert: Sendable, Equatable {
        /// The instance name asked for; Avahi's next alternative ("name #2") on a clash.
        public var name: String
        public var port: UInt16
        /// The TXT record's strings, in order.
        public var txt: [String]

        public init(name: String, port: UInt16, txt: [String]) {
            self.name = name
            self.port = port
            self.txt = txt
        }
    }

    public let serviceType: String
    /// Keeps each resolver after it finds, so a record that changes is found again; at most `limit` records.
    private let follow: Bool
    private let limit: Int
    /// The poll thread's name for the watchdog, and what its journal line says stops while it is stuck.
    private let thread: String
    private let serves: String
    /// Every event, in the order Avahi reported it; ends after `stop()`.
    public let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation

    // Owned by the poll thread once started (see the type's comment).
    private var poll: OpaquePointer?
    private var client: OpaquePointer?
    private var reconnectTimer: OpaquePointer?
    private var resolvers: [Record: OpaquePointer] = [:]
    /// Records browsed that did not resolve: tried again at the retry timer's tick `due`, `gap` ticks after the last try.
    private var unresolved: [Record: (due: Int, gap: Int)] = [:]
    private var retryTimer: OpaquePointer?
    private var retryArmed = false
    private var ticks = 0
    /// Said once each time the records followed reach `limit`.
    private var overflowSaid = false
    /// What `advertise` asks for last, and the pipe that tells the poll thread (made in `start()`).
    private let asked = Mutex<Advert?>(nil)
    private var wakePipe: WakePipe?
    /// What the poll thread took from `asked`, the name it goes by now, its entry group (the client's), and the name announced.
    private var wanted: Advert?
    private var wantedName: String?
    private var group: OpaquePointer?
    private var announced: String?
    private var backoff = Backoff(first: .seconds(1), cap: .seconds(30))
    private var retained: Unmanaged<AvahiBrowser>?
    /// The poll thread, claimed at its first callback; `turn` asserts every later one runs there.
    private let owner: OwnerThread
    /// How deep in our callbacks the poll thread is (one runs inside another: `avahi_client_new`).
    private var depth = 0
    private var claimed = false
    /// What the watchdog sees of the poll thread: our callbacks, where its blocking D-Bus calls are made.
    private var heartbeat: Heartbeat?

    /// With `follow`, resolvers are kept until their record goes, at most `limit` of them, and
    /// records past that are not resolved (a network may announce any number).
    public init(serviceType: String = "_parlour._tcp", follow: Bool = false, limit: Int = 256,
                thread: String = "avahi", serves: String = "Bonjour's view of the servers") {
        self.serviceType = serviceType
        self.follow = follow
        self.limit = limit
        self.thread = thread
        self.serves = serves
        owner = OwnerThread(thread)
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
    }

    /// Starts the poll thread, which connects to avahi-daemon at once and keeps
    /// reconnecting. Throws only when the poll itself cannot be made (no memory,
    /// no thread); an absent daemon is reported through `events` instead.
    /// Call `stop()` once when done: until then the browser keeps itself alive.
    public func start() throws(AvahiError) {
        precondition(poll == nil, "AvahiBrowser.start() called twice")
        guard let poll = avahi_threaded_poll_new() else {
            throw AvahiError(function: "avahi_threaded_poll_new", code: Int32(AVAHI_ERR_NO_MEMORY))
        }
        guard let wakePipe = WakePipe() else {
            avahi_threaded_poll_free(poll)
            throw AvahiError(function: "pipe", code: Int32(AVAHI_ERR_NO_MEMORY))
        }
        self.poll = poll
        self.wakePipe = wakePipe
        let me = Unmanaged.passRetained(self)
        retained = me
        let api = avahi_threaded_poll_get(poll)!
        _ = api.pointee.watch_new(api, wakePipe.readEnd, AVAHI_WATCH_IN, { _, _, _, userdata in
            let me = AvahiBrowser.from(userdata)
            me.turn { me.takeAdvert() }
        }, me.toOpaque())
        reconnectTimer = api.pointee.timeout_new(api, nil, { _, userdata in
            let me = AvahiBrowser.from(userdata)
            me.turn { me.connect() }
        }, me.toOpaque())
        retryTimer = api.pointee.timeout_new(api, nil, { _, userdata in
            let me = AvahiBrowser.from(userdata)
            me.turn { me.retry() }
        }, me.toOpaque())
        arm(afterMilliseconds: 0)
        heartbeat = Heartbeat(thread, serves: serves, bound: .seconds(60),
                              wake: AvahiBrowser.waker(poll, me))
        heartbeat?.waiting(timeout: -1)
        if avahi_threaded_poll_start(poll) < 0 {
            heartbeat?.ended()
            avahi_threaded_poll_free(poll)
            self.poll = nil
            closeWakePipe()
            me.release()
            retained = nil
            throw AvahiError(function: "avahi_threaded_poll_start", code: Int32(AVAHI_ERR_FAILURE))
        }
    }

    /// Stops the poll thread, frees the client with its browser and resolvers,
    /// and ends `events`. Never call it from an Avahi callback.
    public func stop() {
        guard let poll else { return }
        avahi_threaded_poll_stop(poll)
        heartbeat?.ended()
        heartbeat = nil
        if let client { avahi_client_free(client) }
        client = nil
        group = nil
        resolvers.removeAll()
        unresolved.removeAll()
        avahi_threaded_poll_free(poll)
        self.poll = nil
        closeWakePipe()
        reconnectTimer = nil
        retryTimer = nil
        continuation.finish()
        retained?.release()
        retained = nil
    }

    private func closeWakePipe() {
        guard let wakePipe else { return }
        close(wakePipe.readEnd)
        close(wakePipe.writeEnd)
        self.wakePipe = nil
    }

    private static func from(_ userdata: UnsafeMutableRawPointer?) -> AvahiBrowser {
        Unmanaged<AvahiBrowser>.fromOpaque(userdata!).takeUnretainedValue()
    }

    private var userdata: UnsafeMutableRawPointer { retained!.toOpaque() }

    /// Each of Avahi's calls into the browser, on the poll thread: the watchdog sees that thread turn
    /// here, and stuck here in a call it makes (they wait on D-Bus); between them it waits for work.
    private func turn(_ body: () -> Void) {
        if depth == 0 {
            if !claimed {
                owner.claim()
                claimed = true
            }
            owner.assertCurrent()
            heartbeat?.turning()
        }
        depth += 1
        body()
        depth -= 1
        if depth == 0 { heartbeat?.waiting(timeout: -1) }
    }

    /// Makes the poll thread turn (a test's stall): a timeout due now, added under the poll's lock.
    private static func waker(_ poll: OpaquePointer, _ me: Unmanaged<AvahiBrowser>) -> @Sendable () -> Void {
        let (pollAddress, meAddress) = (Int(bitPattern: poll), Int(bitPattern: me.toOpaque()))
        return {
            guard let poll = OpaquePointer(bitPattern: pollAddress) else { return }
            avahi_threaded_poll_lock(poll)
            let api = avahi_threaded_poll_get(poll)!
            var now = timeval()
            avahi_elapse_time(&now, 0, 0)
            _ = api.pointee.timeout_new(api, &now, { _, userdata in
                let me = AvahiBrowser.from(userdata)
                me.turn {}
            }, UnsafeMutableRawPointer(bitPattern: meAddress))
            avahi_threaded_poll_unlock(poll)
        }
    }

    // MARK: The client (poll thread)

    private func arm(afterMilliseconds ms: UInt32) {
        guard let poll, let reconnectTimer else { return }
        let api = avahi_threaded_poll_get(poll)!
        var when = timeval()
        avahi_elapse_time(&when, ms, 0)
        api.pointee.timeout_update(reconnectTimer, &when)
    }

    /// Replaces the client (if any) with a new one, from the reconnect timer so
    /// that no client is freed inside its own callback.
    private func connect() {
        if let client { avahi_client_free(client) }
        client = nil
        // The client took its group and resolvers with it.
        group = nil
        announce(nil)
        resolvers.removeAll()
        unresolved.removeAll()
        guard let poll else { return }
        var error: Int32 = 0
        let made = avahi_client_new(avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL, { client, state, userdata in
            let me = AvahiBrowser.from(userdata)
            me.turn { me.clientChanged(client, state) }
        }, userdata, &error)
        guard let made else {
            continuation.yield(.daemonAvailable(false, reason: AvahiError(function: "avahi_client_new", code: error)))
            arm(afterMilliseconds: milliseconds(backoff.next()))
            return
        }
        client = made
    }

    /// Also runs inside `avahi_client_new`, before it returns, with the new client.
    private func clientChanged(_ changed: OpaquePointer?, _ state: AvahiClientState) {
        guard let changed else { return }
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            backoff.reset()
            continuation.yield(.daemonAvailable(true))
            browse(with: changed)
            register(with: changed)
        case AVAHI_CLIENT_CONNECTING:
            continuation.yield(.daemonAvailable(false, reason: AvahiError(function: "avahi_client_new", code: Int32(AVAHI_ERR_NO_DAEMON))))
        case AVAHI_CLIENT_FAILURE:
            let code = avahi_client_errno(changed)
            continuation.yield(.daemonAvailable(false, reason: AvahiError(function: "avahi_client_errno", code: code)))
            // A disconnected client never recovers; a new one waits for the daemon.
            arm(afterMilliseconds: code == Int32(AVAHI_ERR_DISCONNECTED) ? 0 : milliseconds(backoff.next()))
        case AVAHI_CLIENT_S_REGISTERING, AVAHI_CLIENT_S_COLLISION:
            // The host's own name is being (re)registered: what was announced is withdrawn, and made again once RUNNING.
            if let group { avahi_entry_group_reset(group) }
            announce(nil)
        default:
            break
        }
    }

    private func browse(with client: OpaquePointer) {
        // The browser belongs to the client, which frees it.
        let browser = avahi_service_browser_new(
            client, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), serviceType, nil, AvahiLookupFlags(0),
            { _, interface, proto, event, name, type, domain, _, userdata in
                let me = AvahiBrowser.from(userdata)
                me.turn {
                    me.browsed(event, Record(interface: interface, proto: proto, name: string(name), type: string(type), domain: string(domain)))
                }
            }, userdata)
        if browser == nil {
            continuation.yield(.failed(AvahiError(function: "avahi_service_browser_new", code: avahi_client_errno(client))))
        }
    }

    // MARK: Browsing and resolving (poll thread)

    private func browsed(_ event: AvahiBrowserEvent, _ record: Record) {
        switch event {
        case AVAHI_BROWSER_NEW:
            if let stale = resolvers.removeValue(forKey: record) { avahi_service_resolver_free(stale) }
            unresolved.removeValue(forKey: record)
            resolve(record)
        case AVAHI_BROWSER_REMOVE:
            if let pending = resolvers.removeValue(forKey: record) { avahi_service_resolver_free(pending) }
            unresolved.removeValue(forKey: record)
            continuation.yield(.removed(record))
        case AVAHI_BROWSER_FAILURE:
            // A lost daemon also fails the browser; the client's FAILURE reports that one.
            if let client, avahi_client_get_state(client) == AVAHI_CLIENT_S_RUNNING {
                continuation.yield(.failed(AvahiError(function: "avahi_service_browser", code: avahi_client_errno(client))))
            }
        default:
            break  // CACHE_EXHAUSTED and ALL_FOR_NOW: nothing to do.
        }
    }

    private func resolve(_ record: Record) {
        guard let client else { return }
        if follow, resolvers.count >= limit {
            if !overflowSaid {
                overflowSaid = true
                continuation.yield(.failed(AvahiError(function: "avahi_service_resolver_new", code: Int32(AVAHI_ERR_TOO_MANY_OBJECTS))))
            }
            return
        }
        overflowSaid = false
        // Resolving over the record's own protocol gives its A or AAAA record,
        // so a service seen over IPv4 and IPv6 yields both addresses.
        let resolver = avahi_service_resolver_new(
            client, record.interface, record.proto, record.name, record.type, record.domain, record.proto,
            AvahiLookupFlags(0),
            { resolver, interface, proto, event, name, type, domain, host, address, port, txt, flags, userdata in
                let me = AvahiBrowser.from(userdata)
                me.turn {
                    let record = Record(interface: interface, proto: proto, name: string(name), type: string(type), domain: string(domain))
                    if event == AVAHI_RESOLVER_FOUND, let address {
                        me.unresolved.removeValue(forKey: record)
                        let interfaceName = AvahiBrowser.interfaceName(interface)
                        me.continuation.yield(.found(DiscoveredServer(
                            name: record.name, host: string(host), port: Int(port),
                            addresses: [AvahiBrowser.text(address, interface: interfaceName)],
                            txt: DiscoveredServer.txtRecord(AvahiBrowser.strings(txt)), interface: interfaceName),
                            record: record, own: flags.rawValue & AVAHI_LOOKUP_RESULT_OUR_OWN.rawValue != 0))
                        if me.follow { return }
                    } else if let client = me.client {
                        // Still browsed (a record that goes is REMOVEd, which frees its resolver first): try again later.
                        me.failedToResolve(record, AvahiError(function: "avahi_service_resolver", code: avahi_client_errno(client)))
                    }
                    me.resolvers.removeValue(forKey: record)
                    avahi_service_resolver_free(resolver)
                }
            }, userdata)
        if let resolver {
            resolvers[record] = resolver
        } else {
            continuation.yield(.failed(AvahiError(function: "avahi_service_resolver_new", code: avahi_client_errno(client))))
        }
    }

    /// Tries `record` again after a gap that doubles from one tick (5 s) to 60 (5 min); says so the first
    /// time for its name (one name has a record for each protocol and interface).
    private func failedToResolve(_ record: Record, _ error: AvahiError) {
        if !unresolved.keys.contains(where: { $0.name == record.name }) { continuation.yield(.unresolved(record, error)) }
        let gap = unresolved[record].map { min($0.gap * 2, 60) } ?? 1
        unresolved[record] = (ticks + gap, gap)
        armRetry()
    }

    private func armRetry() {
        guard !retryArmed, !unresolved.isEmpty, let poll, let retryTimer else { return }
        retryArmed = true
        let api = avahi_threaded_poll_get(poll)!
        var when = timeval()
        avahi_elapse_time(&when, 5000, 0)
        api.pointee.timeout_update(retryTimer, &when)
    }

    private func retry() {
        retryArmed = false
        ticks += 1
        for (record, (due, _)) in unresolved where due <= ticks && resolvers[record] == nil { resolve(record) }
        armRetry()
    }

    // MARK: Advertising (poll thread)

    /// Announces `advert` under the browser's type, in place of what was announced before (nil:
    /// withdraws it), from the poll thread soon after; kept over a restarted avahi-daemon. `events`
    /// says the name it goes by. Any thread, between `start()` and `stop()`; it never waits.
    public func advertise(_ advert: Advert?) {
        asked.withLock { $0 = advert }
        wakePipe?.wake()
    }

    private func takeAdvert() {
        wakePipe?.drain()
        let advert = asked.withLock { $0 }
        guard advert != wanted else { return }
        if advert?.name != wanted?.name { wantedName = advert?.name }
        wanted = advert
        if let client { register(with: client) }
    }

    /// Puts `wanted` in the entry group and commits it, under the next alternative name while the one it
    /// has clashes with a service Avahi already knows; withdraws it when nothing is wanted.
    private func register(with client: OpaquePointer) {
        guard avahi_client_get_state(client) == AVAHI_CLIENT_S_RUNNING else { return }
        guard let wanted, var name = wantedName else {
            if let group { avahi_entry_group_reset(group) }
            announce(nil)
            return
        }
        if let group {
            avahi_entry_group_reset(group)
        } else {
            // The group belongs to the client, which frees it.
            group = avahi_entry_group_new(client, { group, state, userdata in
                let me = AvahiBrowser.from(userdata)
                me.turn { me.groupChanged(group, state) }
            }, userdata)
        }
        guard let group else {
            continuation.yield(.failed(AvahiError(function: "avahi_entry_group_new", code: avahi_client_errno(client))))
            return
        }
        announce(nil)
        var list: UnsafeMutablePointer<AvahiStringList>?
        for text in wanted.txt { list = avahi_string_list_add(list, text) }
        defer { avahi_string_list_free(list) }
        func add(_ name: String) -> Int32 {
            avahi_entry_group_add_service_strlst(group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC),
                                                 AvahiPublishFlags(0), name, serviceType, nil, nil, wanted.port, list)
        }
        var result = add(name)
        // Each alternative is new ("name #2", "#3", ...), so this ends; bounded all the same.
        var renames = 0
        while result == Int32(AVAHI_ERR_COLLISION), renames < 100 {
            name = Self.alternative(name)
            renames += 1
            result = add(name)
        }
        wantedName = name
        if result == Int32(AVAHI_OK) { result = avahi_entry_group_commit(group) }
        if result < 0 {
            continuation.yield(.failed(AvahiError(function: "avahi_entry_group_add_service", code: result)))
        }
    }

    private func groupChanged(_ changed: OpaquePointer?, _ state: AvahiEntryGroupState) {
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            announce(wantedName)
        case AVAHI_ENTRY_GROUP_COLLISION:
            // Another host announces this name: take the next one, as Avahi's own services do.
            wantedName = wantedName.map(Self.alternative)
            if let client = changed.flatMap(avahi_entry_group_get_client) { register(with: client) }
        case AVAHI_ENTRY_GROUP_FAILURE:
            let code = changed.flatMap(avahi_entry_group_get_client).map(avahi_client_errno) ?? Int32(AVAHI_ERR_FAILURE)
            continuation.yield(.failed(AvahiError(function: "avahi_entry_group_commit", code: code)))
        default:
            break  // UNCOMMITED and REGISTERING: on the way.
        }
    }

    /// Says the name announced now, when it changed.
    private func announce(_ name: String?) {
        guard name != announced else { return }
        announced = name
        continuation.yield(.advertised(name))
    }

    private static func alternative(_ name: String) -> String {
        guard let next = avahi_alternative_service_name(name) else { return name + " #2" }
        defer { avahi_free(next) }
        return String(cString: next)
    }

    // MARK: Copying out of C

    private static func interfaceName(_ index: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard index > 0, if_indextoname(UInt32(index), &buffer) != nil else { return String(index) }
        return String(cBuffer: buffer)
    }

    /// The address as text; a link-local IPv6 one gets its interface as zone,
    /// without which it cannot be reached.
    private static func text(_ address: UnsafePointer<AvahiAddress>, interface: String) -> String {
        var buffer = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
        avahi_address_snprint(&buffer, buffer.count, address)
        let text = String(cBuffer: buffer)
        return DiscoveredServer.isLinkLocalIPv6(text) ? "\(text)%\(interface)" : text
    }

    private static func strings(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [String] {
        var strings: [String] = []
        var item = list
        while let current = item {
            let bytes = UnsafeBufferPointer(start: avahi_string_list_get_text(current), count: avahi_string_list_get_size(current))
            strings.append(String(decoding: bytes, as: UTF8.self))
            item = avahi_string_list_get_next(current)
        }
        // Avahi keeps a received TXT record last string first; the wire order
        // matters because the first of a repeated key wins.
        return strings.reversed()
    }
}

private func milliseconds(_ duration: Duration) -> UInt32 {
    UInt32(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
}

private func string(_ pointer: UnsafePointer<CChar>?) -> String {
    pointer.map { String(cString: $0) } ?? ""
}
