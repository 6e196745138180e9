// Keeps the list of Parlour servers that Bonjour sees, so that nobody has to type
// an address. Easy to get wrong: one server shows up as several records (each
// interface, IPv4 and IPv6) and is gone only when all of them are; anything may
// advertise `_parlour._tcp`; and a missing or restarting avahi-daemon must be
// said once, not in a flood, and must never stop the satellite.
import SatelliteCore

/// The servers found on the network, kept current from Avahi, and whether
/// Bonjour works at all (status `bonjour`).
///
/// Found and removed servers and the daemon's comings and goings are journal
/// lines on the bus. Other actors (the server pin) follow `changes()`.
public actor Discovery {
    private let bus: EventBus
    private let serviceType: String

    /// Every resolved record of a server, in the order first seen.
    private var records: [(record: AvahiBrowser.Record, server: DiscoveredServer)] = []
    /// Records of services that are not servers, kept only to say so once.
    private var ignored: [AvahiBrowser.Record: DiscoveredServer.Identity] = [:]
    private var daemonKnown: Bool?
    private var watchers: [Int: AsyncStream<[DiscoveredServer]>.Continuation] = [:]
    private var nextWatcher = 0

    /// The servers found, one entry per server however many records it has, by name.
    public private(set) var servers: [DiscoveredServer] = []

    /// Whether avahi-daemon serves us; false until it has said so.
    public var available: Bool { daemonKnown ?? false }

    /// Status `bonjour`: "ok" or "unavailable".
    public var bonjour: String { available ? "ok" : "unavailable" }

    public init(bus: EventBus, serviceType: String = "_parlour._tcp") {
        self.bus = bus
        self.serviceType = serviceType
    }

    /// Browses until the task is cancelled. An absent avahi-daemon is reported
    /// and waited for; nothing here throws or ends early.
    public func run() async {
        var backoff = Backoff(cap: .seconds(30))
        while !Task.isCancelled {
            let browser = AvahiBrowser(serviceType: serviceType)
            do {
                try browser.start()
            } catch {
                daemon(available: false, reason: error)
                try? await Task.sleep(for: backoff.next())
                continue
            }
            backoff.reset()
            for await event in browser.events { handle(event) }
            // Only cancellation ends the stream; stop() joins Avahi's thread, which is quick.
            browser.stop()
        }
        for watcher in watchers.values { watcher.finish() }
        watchers.removeAll()
    }

    /// The current list at once, then the whole list again after every change.
    /// Only the newest list waits for a slow reader; compare `identity` to spot newcomers.
    public func changes() -> AsyncStream<[DiscoveredServer]> {
        let (stream, continuation) = AsyncStream.makeStream(of: [DiscoveredServer].self, bufferingPolicy: .bufferingNewest(1))
        nextWatcher += 1
        let key = nextWatcher
        watchers[key] = continuation
        continuation.yield(servers)
        return stream
    }

    private func handle(_ event: AvahiBrowser.Event) {
        switch event {
        case .found(let server, let record, _):
            records.removeAll { $0.record == record }
            if server.isServer {
                ignored.removeValue(forKey: record)
                records.append((record, server))
            } else {
                if !ignored.values.contains(server.identity) {
                    bus.notice(.debug, "Ignored \"\(server.name)\": it advertises \(serviceType) with role \(server.txt["role"] ?? ""), not server.",
                               ["server.name": server.name, "server.addresses": server.addresses.joined(separator: " ")])
                }
                ignored[record] = server.identity
            }
            refresh(quietly: false)
        case .removed(let record):
            records.removeAll { $0.record == record }
            ignored.removeValue(forKey: record)
            refresh(quietly: false)
        case .daemonAvailable(let ok, let reason):
            daemon(available: ok, reason: reason)
        case .failed(let error):
            bus.notice(.warning, "Bonjour browsing went wrong: \(error).", ["avahi.function": error.function])
        case .unresolved(let record, let error):
            bus.notice(.notice, Self.unresolvedSentence(record, error), ["server.name": record.name, "avahi.function": error.function])
        case .advertised:
            break  // Discovery advertises nothing.
        }
    }

    /// What the journal says of a record that does not resolve, for servers and siblings alike.
    static func unresolvedSentence(_ record: AvahiBrowser.Record, _ error: AvahiError) -> String {
        "Bonjour shows \"\(record.name)\" (\(record.type)), but its address cannot be found (\(error)). "
            + "Its host may be asleep or its announcement stale; it is looked up again, less often the longer this lasts."
    }

    /// Says so when the daemon comes or goes (not when it stays as it was). A lost
    /// daemon takes every record with it: they come back when it does.
    private func daemon(available ok: Bool, reason: AvahiError?) {
        let before = daemonKnown
        guard before != ok else { return }
        daemonKnown = ok
        if ok {
            if before == false {
                bus.notice(.notice, "avahi-daemon is back: looking for Parlour servers again.", ["bonjour": "ok"])
            } else {
                bus.notice(.info, "Looking for Parlour servers with Bonjour (\(serviceType)).", ["bonjour": "ok"])
            }
            return
        }
        records.removeAll()
        ignored.removeAll()
        refresh(quietly: true)
        var fields = ["bonjour": "unavailable"]
        if let reason { fields["avahi.error"] = reason.description }
        bus.notice(.warning,
                   "avahi-daemon is not running, so no server can be found with Bonjour; a pinned or configured server still works. Start it with `systemctl start avahi-daemon`; the satellite reconnects by itself.",
                   fields)
    }

    private func refresh(quietly: Bool) {
        var merged: [DiscoveredServer.Identity: DiscoveredServer] = [:]
        for (_, server) in records {
            merged[server.identity] = merged[server.identity]?.merged(with: server) ?? server
        }
        let list = merged.values.sorted { ($0.name, $0.host, $0.port) < ($1.name, $1.host, $1.port) }
        guard list != servers else { return }
        if !quietly {
            let before = Set(servers.map(\.identity)), after = Set(list.map(\.identity))
            for server in list where !before.contains(server.identity) {
                bus.notice(.notice, "Found the Parlour server \"\(server.name)\" at \(server.url).", fields(server))
            }
            for server in servers where !after.contains(server.identity) {
                bus.notice(.notice, "The Parlour server \"\(server.name)\" at \(server.url) is no longer advertised.", fields(server))
            }
        }
        servers = list
        // A reader that has gone is forgotten here, when the list it would have had is told (no task to forget it sooner).
        for (key, watcher) in watchers {
            if case .terminated = watcher.yield(list) { watchers.removeValue(forKey: key) }
        }
    }

    private func fields(_ server: DiscoveredServer) -> [String: String] {
        ["server.name": server.name, "server.url": server.url, "server.addresses": server.addresses.joined(separator: " ")]
    }
}
