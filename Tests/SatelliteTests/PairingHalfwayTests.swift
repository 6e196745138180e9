// A pairing held halfway, as a hostile network would like it: the link's token
// already in <state>/token, pin.json not saved yet. A search then must send that
// token nowhere. The window cannot be held open from outside the daemon without
// a sleep, so this is at the actor level: the real ServerChooser, ServerPin, Link
// and HTTP client, real test servers (the hostile one records every credential
// it is shown), Bonjour's list handed to the chooser as Discovery would (no Avahi
// needed), and pin.json's save held on a thread of the test's own until inotify
// says the token file is in place.
import Foundation
import Glibc
import Testing
import SatelliteCore
@testable import Satellite

@Suite("a pairing half done is seen by nobody", .timeLimit(.minutes(1)))
struct PairingHalfwayTests {
    @Test("with the link's token written and pin.json not yet saved, a search sends the token to no server Bonjour shows")
    func searchDuringPairing() async throws {
        let hostile = try await TestServer.start(token: "hostile-\(UUID().uuidString)", knobs: ["recordCredentials": true])
        defer { hostile.stop() }
        let house = try await TestServer.start(token: "house-\(UUID().uuidString)")
        defer { house.stop() }
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("state-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: state) }

        let bus = EventBus()
        let saves = BlockingThread(name: "held saves")
        let pin = ServerPin(stateDirectory: state, configuredURL: nil, bus: bus, thread: saves)
        let link = Link(tokens: TokenStore(stateDirectory: state, environment: [:]), http: HTTPClient(bus: bus), bus: bus,
                        keeper: StateKeeper(bus: bus), retryMs: 2000)
        let chooser = ServerChooser(pin: pin, discovery: Discovery(bus: bus), link: link, bus: bus, stateDirectory: state,
                                    retryMs: 60_000)

        // Bonjour shows the hostile box; with no token held it refuses /v1/models, so it is not pinned.
        await chooser.seen([DiscoveredServer(name: "Parlour hostile", host: "127.0.0.1", port: hostile.port,
                                             addresses: ["127.0.0.1"], txt: ["role": "server"], interface: "lo")])
        let first = try await hostile.requests()
        #expect(first.map { $0["path"]?.stringValue } == ["/health", "/v1/models"], "\(first)")
        #expect(await pin.current() == nil)

        // pin.json's save waits behind a job that returns only when the test says, after the token file is in place.
        let watch = inotify_init1(Int32(IN_CLOEXEC))
        try #require(watch >= 0 && inotify_add_watch(watch, state, UInt32(IN_MOVED_TO)) >= 0)
        defer { close(watch) }
        let release = DispatchSemaphore(value: 0)
        let (steps, step) = AsyncStream.makeStream(of: String.self)
        let holding = Task {
            await saves.run {
                step.yield("holding")
                var events = [UInt8](repeating: 0, count: 4096)
                _ = read(watch, &events, events.count)  // AtomicFile renames the token file into place
                step.yield("token in place")
                release.wait()
            }
        }
        var said = steps.makeAsyncIterator()
        #expect(await said.next() == "holding")

        let text = "parlour://pair?url=\(ListenURL.percentEncoded(house.url))&token=\(ListenURL.percentEncoded(house.token))"
        let pairing = Task { await chooser.pair(text) }
        #expect(await said.next() == "token in place")
        #expect(TokenFile.saved(stateDirectory: state).map { String(decoding: $0, as: UTF8.self) } == house.token + "\n")

        // The window: Bonjour changes (the hostile box flaps its announcement) and a search runs.
        await chooser.search()
        let during = try await hostile.requests().map { $0["shownCredential"]?.stringValue }
        #expect(!during.contains(house.token), "requests that carried the link's token to the hostile box: \(during)")

        release.signal()
        await holding.value
        let paired = await pairing.value
        #expect(paired.json["status"] == "completed", "\(paired.json)")
        #expect(await pin.current()?.url == house.url)
        let after = try await hostile.requests()
        #expect(!after.contains { $0["shownCredential"]?.stringValue == house.token })
        #expect(after.count == first.count, "the hostile box heard nothing more once pairing began: \(after)")
    }
}
