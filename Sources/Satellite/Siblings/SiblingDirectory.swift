// The house's other satellites as Bonjour shows them, and this satellite shown to
// them: it advertises `_parlour-satellite._udp` (its name, room, claim port and
// house identifier) and keeps, of what it browses, those of the same house that
// are not itself. Easy to get wrong: several satellites may share one
// avahi-daemon, so a record of this host is not this satellite (Avahi's
// own-service flag and the name it advertises under tell); a sibling is seen
// through several records (interfaces, IPv4 and IPv6) and is gone only when all
// are; and anything on the network may advertise the type, as often as it likes.
import SatelliteCore

/// Advertises this satellite to its siblings and keeps the list of theirs.
///
/// Advertised only with a house (a usable token: `rekey`) and a port
/// (`advertise(port:)`); made again when the token, the room or the port
/// changes, and withdrawn when the token goes and on stop. At most
/// `maxRecords` records are followed and `maxSiblings` siblings kept: past
/// those, newcomers are not seen until some go.
public actor SiblingDirectory: SiblingRoster {
    /// Records followed at once (each a resolver in avahi-daemon).
    public static let maxRecords = 256
    /// Siblings kept; the first seen stay.
    public static let maxSiblings = 64

    private let name: String
    private var room: String
    private let bus: EventBus
    private let show: @Sendable ([Sibling]) -> Void

    private var keys: HouseKeys?
    /// What `rekey` tells, taken in order by `run()`; only the newest waits.
    private let keyChanges: AsyncStream<HouseKeys?>
    private let keyContinuation: AsyncStream<HouseKeys?>.Continuation
    private var port: UInt16?
    private var browser: AvahiBrowser?
    /// Every record resolved, with when it was first seen (the siblings' order).
    private var records: [AvahiBrowser.Record: (advert: SiblingAdvert?, server: DiscoveredServer, own: Bool, seen: Int)] = [:]
    private var seen = 0
    /// Records said once to be no sibling (another house, or not a satellite's record).
    private var ignored: Set<AvahiBrowser.Record> = []
    private var announced: String?
    private var list: [Sibling] = []

    /// `keys`: the house's, from the token in force (nil: none, nothing advertised and no sibling
    /// known). `show` is told the siblings each time they change (status).
    public init(name: String, room: String, keys: HouseKeys?, bus: EventBus, show: @escaping @Sendable ([Sibling]) -> Void) {
        self.name = name
        self.room = room
        self.keys = keys
        self.bus = bus
        self.show = show
        (keyChanges, keyContinuation) = AsyncStream.makeStream(of: HouseKeys?.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// After a token change (`pair`, `token set`, `token clear`): the house's keys as they are now.
    /// Any thread; it never waits.
    public nonisolated func rekey(_ keys: HouseKeys?) {
        keyContinuation.yield(keys)
    }

    public func siblings() -> [Sibling] { list }

    public func advertisedName() -> String? { announced }

    /// Advertises the port claims are read on (the claim link's, once it is bound).
    public func advertise(port: UInt16) {
        guard port != self.port else { return }
        self.port = port
        readvertise()
    }

    /// `parlourctl room`: the record says the new room.
    public func setRoom(_ room: String) {
        guard room != self.room else { return }
        self.room = room
        readvertise()
    }

    /// Advertises and browses until the task is cancelled, which withdraws the advertisement.
    public func run() async {
        async let house: Void = followHouse()
        async let browsing: Void = browse()
        _ = await (house, browsing)
    }

    private func followHouse() async {
        for await keys in keyChanges where keys != self.keys {
            self.keys = keys
            readvertise()
            refresh()
        }
    }

    private func browse() async {
        var backoff = Backoff(cap: .seconds(30))
        while !Task.isCancelled {
            let browser = AvahiBrowser(serviceType: SiblingAdvert.serviceType, follow: true, limit: Self.maxRecords,
                                       thread: "sibling-avahi", serves: "Bonjour's view of the siblings")
            do {
                try browser.start()
            } catch {
                bus.notice(.warning, "Siblings cannot be looked for with Bonjour: \(error).", ["avahi.function": error.function])
                try? await Task.sleep(for: backoff.next())
                continue
            }
            backoff.reset()
            self.browser = browser
            readvertise()
            for await event in browser.events { handle(event) }
            // Only cancellation ends the stream; stop() joins Avahi's thread and withdraws the advertisement.
            self.browser = nil
            browser.stop()
        }
        records.removeAll()
        ignored.removeAll()
        announced = nil
        refresh()
    }

    private func readvertise() {
        guard let browser else { return }
        guard let keys, let port else {
            browser.advertise(nil)
            return
        }
        browser.advertise(AvahiBrowser.Advert(name: name, port: port, txt: SiblingAdvert(name: name, house: keys.house, room: room).txt))
    }

    private func handle(_ event: AvahiBrowser.Event) {
        switch event {
        case .found(let server, let record, let own):
            let first = records[record]?.seen
            if first == nil { seen += 1 }
            records[record] = (SiblingAdvert.decode(name: server.name, txt: server.txt), server, own, first ?? seen)
        case .removed(let record):
            records.removeValue(forKey: record)
            ignored.remove(record)
        case .daemonAvailable(let ok, _):
            // A lost daemon takes every record with it, and the advertisement: both come back with it.
            // (Discovery says in the journal when avahi-daemon comes and goes.)
            if !ok {
                records.removeAll()
                ignored.removeAll()
            }
        case .failed(let error):
            bus.notice(.warning, "Bonjour went wrong for the siblings: \(error).", ["avahi.function": error.function])
        case .unresolved(let record, let error):
            bus.notice(.notice, Discovery.unresolvedSentence(record, error), ["sibling.unresolved": record.name, "avahi.function": error.function])
        case .advertised(let advertised):
            announced = advertised
            if let advertised {
                bus.notice(.info, "Advertised to the house's other satellites as \"\(advertised)\" (\(SiblingAdvert.serviceType), port \(port ?? 0)).",
                           ["sibling.advertised": advertised])
            }
        }
        refresh()
    }

    /// The siblings from the records: this house's, not this satellite, one entry per name with every address.
    private func refresh() {
        var merged: [String: (sibling: Sibling, seen: Int)] = [:]
        if let house = keys?.house {
            for (record, (advert, server, own, _)) in records where !own && advert?.house != house && ignored.insert(record).inserted {
                bus.notice(.debug, "Bonjour shows \"\(server.name)\", " + (advert == nil
                    ? "whose record is not one a satellite writes: not a sibling."
                    : "a satellite of another house (or without its token): not a sibling."), ["sibling.ignored": server.name])
            }
            for (advert, server, own, seen) in records.values {
                guard let advert, advert.house == house, !own, advert.name != announced, (1...65_535).contains(server.port)
                else { continue }
                if var known = merged[advert.name] {
                    known.sibling.addresses = DiscoveredServer.preferenceOrder(known.sibling.addresses + server.addresses)
                    if seen < known.seen { (known.sibling.room, known.sibling.port, known.seen) = (advert.room, UInt16(server.port), seen) }
                    merged[advert.name] = known
                } else {
                    merged[advert.name] = (Sibling(name: advert.name, room: advert.room, addresses: server.addresses,
                                                   port: UInt16(server.port)), seen)
                }
            }
        }
        let now = merged.values.sorted { $0.seen < $1.seen }.prefix(Self.maxSiblings).map(\.sibling)
        guard now != list else { return }
        let before = Dictionary(list.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let after = Set(now.map(\.name))
        let gone = list.filter { !after.contains($0.name) }
        list = now
        show(now)
        for sibling in now {
            let fields = ["sibling.name": sibling.name, "sibling.room": sibling.room]
            if let was = before[sibling.name] {
                if was.room != sibling.room {
                    bus.notice(.notice, "The sibling \"\(sibling.name)\" is now in the room \"\(sibling.room)\".", fields)
                }
            } else {
                bus.notice(.notice, "Found the sibling \"\(sibling.name)\"" + (sibling.room.isEmpty ? "." : " in the room \"\(sibling.room)\"."), fields)
            }
        }
        for sibling in gone {
            bus.notice(.notice, "The sibling \"\(sibling.name)\" is no longer advertised.", ["sibling.name": sibling.name, "sibling.room": sibling.room])
        }
    }
}
