import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("pinning rules")
struct PinPolicyTests {
    typealias Advertiser = PinPolicy.Advertiser

    private static let then = WallTime(seconds: 1_714_564_800)
    private static let now = WallTime(seconds: 1_800_000_000)
    private static let den = Advertiser(name: "Parlour on den", host: "den.local", port: 8765)
    private static let attic = Advertiser(name: "Parlour on attic", host: "attic.local", port: 8765)
    private static let rogue = Advertiser(name: "Parlour on den", host: "198.51.100.66", port: 8765)
    private static let pinnedDen = Pin(url: "http://den.local:8765", name: "Parlour on den", how: .discovered, pinnedAt: then)

    // MARK: the server in use

    @Test("server.url in the config wins over any stored pin", arguments: [PinHow.paired, .manual, .discovered])
    func configuredWins(how: PinHow) {
        let stored = Pin(url: "http://den.local:8765", name: "Den", how: how, pinnedAt: Self.then)
        let inUse = PinPolicy.serverInUse(configuredURL: "https://parlour.example:8443", stored: stored, now: Self.now)
        #expect(inUse == Pin(url: "https://parlour.example:8443", name: "parlour.example", how: .configured, pinnedAt: Self.now))
    }

    @Test("a configured server carries the addresses its name stood for, and only a pin that says where its server is is placed")
    func configuredAddresses() {
        let inUse = PinPolicy.serverInUse(configuredURL: "http://den.local:8765", stored: nil, now: Self.now, configuredAddresses: ["10.0.0.2"])
        #expect(inUse?.addresses == ["10.0.0.2"] && inUse?.how == .configured && inUse?.isPlaced == true)
        #expect(PinPolicy.serverInUse(configuredURL: "http://den.local:8765", stored: nil, now: Self.now)?.isPlaced == false)
        #expect(PinPolicy.serverInUse(configuredURL: "http://10.0.0.2:8765", stored: nil, now: Self.now)?.isPlaced == true)
        #expect(PinPolicy.serverInUse(configuredURL: "http://[2001:db8::2]:8765", stored: nil, now: Self.now)?.isPlaced == true)
        // Escaped, the host is no address, and no look-up of it found any: no token goes with it.
        #expect(Pin(url: "http://den%2Elocal:8765", name: "Den", how: .manual, pinnedAt: Self.then).isPlaced == false)
        #expect(Self.pinnedDen.isPlaced == false)
    }

    @Test("a stored pin is used as it is when the config has no server.url", arguments: [nil, "", "  "])
    func storedPin(configured: String?) {
        #expect(PinPolicy.serverInUse(configuredURL: configured, stored: Self.pinnedDen, now: Self.now) == Self.pinnedDen)
    }

    @Test("with neither, there is no server and the satellite must look")
    func nothing() {
        #expect(PinPolicy.serverInUse(configuredURL: "", stored: nil, now: Self.now) == nil)
        // Only the config can say configured; a stored pin claiming it is not trusted.
        let forged = Pin(url: "http://den.local", name: "Den", how: .configured, pinnedAt: Self.then)
        #expect(PinPolicy.serverInUse(configuredURL: nil, stored: forged, now: Self.now) == nil)
    }

    @Test("a configured server is never replaced: pinning is refused and says how to change it", arguments: [
        PinHow.paired, .manual, .discovered,
    ])
    func configuredIsNeverReplaced(how: PinHow) throws {
        let refusal = try #require(PinPolicy.refusalToPin(how: how, configuredURL: "http://den.local:8765", stored: nil))
        #expect(refusal.code == .invalidRequest)
        #expect(refusal.message.contains("server.url"))
        #expect(refusal.message.contains("http://den.local:8765"))
    }

    @Test("pairing and use replace a pin; discovery only fills an empty one; configured is never stored")
    func whoMayPin() {
        for configured in [nil, "", " "] as [String?] {
            #expect(PinPolicy.refusalToPin(how: .paired, configuredURL: configured, stored: Self.pinnedDen) == nil)
            #expect(PinPolicy.refusalToPin(how: .manual, configuredURL: configured, stored: Self.pinnedDen) == nil)
            #expect(PinPolicy.refusalToPin(how: .discovered, configuredURL: configured, stored: nil) == nil)
        }
        let discovered = PinPolicy.refusalToPin(how: .discovered, configuredURL: nil, stored: Self.pinnedDen)
        #expect(discovered?.message.contains("parlourctl unpin") == true)
        #expect(PinPolicy.refusalToPin(how: .configured, configuredURL: nil, stored: nil) != nil)
    }

    // MARK: looking, with nothing pinned

    @Test("candidates are checked in the order found and the first accepted wins; nobody after it is contacted")
    func firstAcceptedWins() async {
        let third = Advertiser(name: "Parlour on loft", host: "loft.local", port: 8765)
        var contacted: [Advertiser] = []
        let answers: [Advertiser: PinPolicy.Check] = [Self.attic: .unhealthy, Self.den: .accepted, third: .accepted]
        let winner = await PinPolicy.firstAccepted([Self.attic, Self.den, third]) { server in
            contacted.append(server)
            return answers[server]!
        }
        #expect(winner == Self.den)
        #expect(contacted == [Self.attic, Self.den])
    }

    @Test("a server that refuses the token is passed over")
    func tokenRefusedIsPassedOver() async {
        let winner = await PinPolicy.firstAccepted([Self.den, Self.attic]) { $0 == Self.den ? .tokenRefused : .accepted }
        #expect(winner == Self.attic)
    }

    @Test("when none is accepted there is no winner, and each was asked once")
    func noneAccepted() async {
        var contacted: [Advertiser] = []
        let same = Advertiser(name: "Parlour on den (IPv6)", host: "Den.Local.", port: 8765)
        let winner = await PinPolicy.firstAccepted([Self.den, Self.attic, same]) { server in
            contacted.append(server)
            return .unhealthy
        }
        #expect(winner == nil)
        #expect(contacted == [Self.den, Self.attic])
        #expect(await PinPolicy.firstAccepted([]) { _ in .accepted } == nil)
    }

    @Test("an accepted server is pinned as discovered, under its Bonjour name")
    func discoveredPin() {
        #expect(PinPolicy.pin(discovered: Self.den, at: Self.now)
            == Pin(url: "http://den.local:8765", name: "Parlour on den", how: .discovered, pinnedAt: Self.now))
        #expect(Advertiser(name: "v6", host: "fe80::1", port: 8765).url == "http://[fe80::1]:8765")
        #expect(Advertiser(name: "v6", host: "fe80::1", port: 8765).address == "[fe80::1]:8765")
    }

    // MARK: newcomers, once pinned

    @Test("while the pinned server answers, nobody is reported")
    func pinnedAnswers() {
        var newcomers = Newcomers()
        #expect(newcomers.report([Self.attic], pinned: Self.pinnedDen, pinnedAnswers: true).isEmpty)
        // Not having been reported then, it is reported when the pinned server goes quiet.
        #expect(newcomers.report([Self.attic], pinned: Self.pinnedDen, pinnedAnswers: false) == [Self.attic])
    }

    @Test("while the pinned server is down, each newcomer is reported once, and the pinned server never")
    func reportedOnce() {
        var newcomers = Newcomers()
        let sameAsPinned = Advertiser(name: "Parlour on den", host: "DEN.local.", port: 8765)
        #expect(newcomers.report([sameAsPinned, Self.attic], pinned: Self.pinnedDen, pinnedAnswers: false) == [Self.attic])
        #expect(newcomers.report([sameAsPinned, Self.attic], pinned: Self.pinnedDen, pinnedAnswers: false).isEmpty)
        // A server that takes the pinned one's name from another address is a newcomer all the same.
        #expect(newcomers.report([Self.attic, Self.rogue], pinned: Self.pinnedDen, pinnedAnswers: false) == [Self.rogue])
        // The pinned server coming back and going again does not repeat a report.
        #expect(newcomers.report([Self.attic], pinned: Self.pinnedDen, pinnedAnswers: true).isEmpty)
        #expect(newcomers.report([Self.attic, Self.rogue], pinned: Self.pinnedDen, pinnedAnswers: false).isEmpty)
    }

    @Test("a newcomer is its name, host and port: a change in any is a new one")
    func identity() {
        var newcomers = Newcomers()
        let variants = [
            Self.attic,
            Advertiser(name: "Parlour on attic", host: "attic.local", port: 8766),
            Advertiser(name: "Parlour in the attic", host: "attic.local", port: 8765),
            Advertiser(name: "Parlour on attic", host: "192.0.2.7", port: 8765),
        ]
        #expect(newcomers.report(variants, pinned: Self.pinnedDen, pinnedAnswers: false) == variants)
        let sameAgain = Advertiser(name: "Parlour on attic", host: "Attic.Local.", port: 8765)
        #expect(newcomers.report([sameAgain], pinned: Self.pinnedDen, pinnedAnswers: false).isEmpty)
    }

    @Test("unpin forgets what was reported")
    func forget() {
        var newcomers = Newcomers()
        #expect(newcomers.report([Self.attic], pinned: Self.pinnedDen, pinnedAnswers: false) == [Self.attic])
        newcomers.forget()
        #expect(newcomers == Newcomers())
        #expect(newcomers.report([Self.attic], pinned: Self.pinnedDen, pinnedAnswers: false) == [Self.attic])
    }

    @Test("the journal line names the newcomer and its address, says it was not contacted, and how to move")
    func notice() {
        let event = Newcomers.notice(Self.attic, pinned: Self.pinnedDen)
        #expect(event.priority == .warning)
        #expect(event.message.contains("Parlour on attic at attic.local:8765"))
        #expect(event.message.contains("was not contacted"))
        #expect(event.message.contains("parlourctl unpin"))
        #expect(event.json["newcomer_url"] == "http://attic.local:8765")
        #expect(event.json["server_url"] == "http://den.local:8765")

        let configured = Pin(url: "http://den.local:8765", name: "den.local", how: .configured, pinnedAt: Self.now)
        let configuredEvent = Newcomers.notice(Self.attic, pinned: configured)
        #expect(configuredEvent.message.contains("set server.url in the config"))
        #expect(!configuredEvent.message.contains("unpin"))
    }
}
