// Both wake paths when another satellite answers, inside one process, on the
// paced test microphone: the local wake word's real ear (WakeWordService, the
// shipped okay_nabu model, TensorFlow Lite), and the stream (ListenStream) on
// the test server's /listen. The siblings' Arbiter needs siblings to say
// "lost", so a scripted WakeArbiter stands in for it: it records what it was
// asked and answers as told. A local wake another satellite answers starts no
// turn and the ear listens again; one this satellite answers starts its turn on
// the audio from the wake. A server's wake another satellite answers is dropped
// there unanswered, and shown, cued and played nowhere.
import Foundation
import Glibc
import Synchronization
import Testing
import TestSupport
import SatelliteCore
@testable import Satellite

@Suite("A wake another satellite answers", .serialized, .timeLimit(.minutes(2)))
struct LostWakeTests {
    /// Answers each wake as scripted (won, lost, or nil: arbitration off), then as `then` says, and
    /// keeps what it was asked.
    final class ScriptedArbiter: WakeArbiter {
        struct Asked: Sendable {
            let levelDb: Double
            let probability: Double
            let wakeNs: UInt64
        }

        private let state = Mutex<(answers: [Bool?], then: Bool?, asked: [Asked])>(([], true, []))
        private let (askedStream, askedIn) = AsyncStream.makeStream(of: Asked.self)

        init(_ answers: [Bool?], then: Bool? = true) { state.withLock { $0 = (answers, then, []) } }

        /// Every wake from now on is answered so.
        func answer(_ won: Bool?) { state.withLock { $0.then = won } }

        func arbitrate(levelDb: Double, probability: Double, wakeNs: UInt64) async -> ArbitrationDecision? {
            let asked = Asked(levelDb: levelDb, probability: probability, wakeNs: wakeNs)
            let answer = state.withLock { state in
                state.asked.append(asked)
                return state.answers.isEmpty ? state.then : state.answers.removeFirst()
            }
            askedIn.yield(asked)
            guard let won = answer else { return nil }
            let own = HeardClaim(claim: SiblingClaim(house: [], session: 1, sequence: 1, levelDb: levelDb, probability: probability,
                                                     ageMs: 0, name: "kitchen", room: ""), wakeMs: wakeNs / 1_000_000)
            let louder = HeardClaim(claim: SiblingClaim(house: [], session: 2, sequence: 1, levelDb: levelDb + 6, probability: probability,
                                                        ageMs: 0, name: "hall", room: ""), wakeMs: wakeNs / 1_000_000)
            return Arbitration.decide(own: own, claims: won ? [] : [louder], windowMs: 200)
        }

        /// The next wake it is asked about.
        func nextAsked() async -> Asked? {
            var iterator = askedStream.makeAsyncIterator()
            return await iterator.next()
        }
    }

    /// The turns the service started, and what each heard: the first second of the microphone.
    final class Turns: Sendable {
        let started = Atomic<Int>(0)
        let (heard, heardIn) = AsyncStream.makeStream(of: [Int16].self)
    }

    @Test("a wake another satellite answers starts no turn, and the ear listens again; the next one it answers gets its turn whole")
    func lostThenWon() async throws {
        let alsa = try ALSAFixture.shared()
        let dir = try Package.temporaryDirectory("wakearb")
        let room = try MicFeeder(path: dir.path + "/mic.fifo")
        defer { room.stop() }
        let bus = EventBus()
        let keeper = StateKeeper(bus: bus)
        let capture = AudioCapture(device: alsa.microphone(infile: room.path), bus: bus)
        let folder = WakeWordFolder(path: Package.root.appendingPathComponent(".build/wakeword").path)
        let engine = try WakeWordEngine.load(SatelliteConfig.WakeWord(), folder: folder, configFile: "test")
        let arbiter = ScriptedArbiter([false, true])
        let turns = Turns()
        let service = WakeWordService(engine: engine, capture: capture, bus: bus, keeper: keeper, refractoryMs: 500,
                                      arbiter: arbiter) { [capture] in
            turns.started.add(1, ordering: .relaxed)
            // The turn takes the microphone handed over at the wake, as a listen does.
            guard let chunks = try? await capture.open() else { return }
            var heard: [Int16] = []
            for await chunk in chunks {
                guard case .samples(let samples) = chunk else { break }
                heard += samples
                if heard.count >= 16_000 { break }
            }
            turns.heardIn.yield(heard)
        }
        let running = Task {
            async let microphone: Void = capture.run()
            async let ear: Void = service.run()
            _ = await (microphone, ear)
        }
        defer { running.cancel() }
        // Started, with no server: the ear listens (unpaired is a state it listens in).
        keeper.update { $0.started = true }

        let question = try await Speech.raw("turn off the kitchen lights", before: 0, after: 1)
        let wake = try await Speech.raw("okay nabu", before: 0.5, after: 0.2)
        let before = MonotonicClock.nanoseconds()
        room.say(wake + question)
        let first = try #require(await arbiter.nextAsked())
        #expect(first.wakeNs >= before && first.wakeNs <= MonotonicClock.nanoseconds())
        #expect(first.probability > 0.85 && first.probability <= 1, "the detector's probability, \(first.probability)")
        #expect(first.levelDb > -50 && first.levelDb < 0, "the word's level, \(first.levelDb) dBFS")
        await room.drained()

        // Said again once the first has been heard out: the ear is listening again, and this wake is answered.
        room.say(wake + question)
        let secondAsked = try #require(await arbiter.nextAsked())
        #expect(secondAsked.wakeNs > first.wakeNs)
        var answered = turns.heard.makeAsyncIterator()
        let heard = try #require(await answered.next())
        // One turn, the won wake's (it may already run as the arbiter returns): the lost one started none.
        #expect(turns.started.load(ordering: .relaxed) == 1, "the lost wake started no turn")
        // The question was said 200 ms after the word: the turn's first second holds most of it.
        let loud = stride(from: 0, to: heard.count, by: 1280).filter { start in
            let frame = heard[start..<min(start + 1280, heard.count)]
            return (frame.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(frame.count)).squareRoot() / 32768 >= 0.012
        }
        #expect(loud.count >= 6, "the turn heard the question from the wake: \(loud.count) loud frames of 80 ms")
        #expect(loud.first.map { $0 < 16_000 / 2 } ?? false, "its first words at once: first loud at sample \(String(describing: loud.first))")
        await Self.stop(running, capture)
    }

    /// Stops what a test started and closes its microphone before its room goes quiet: the devices
    /// of every test here share one audio thread, which must not be left reading a room no one feeds.
    static func stop(_ running: Task<Void, Never>, _ capture: AudioCapture) async {
        running.cancel()
        await running.value
        await capture.close()
    }

    @Test("the server's wake another satellite answers: its turn there is dropped unanswered, and nothing of it is shown or played")
    func serverWakeLost() async throws {
        let server = try await TestServer.start(knobs: ["audioMs": 800, "replyText": "The lights are off."])
        defer { server.stop() }
        let alsa = try ALSAFixture.shared()
        let dir = try Package.temporaryDirectory("wakearbsrv")
        let room = try MicFeeder(path: dir.path + "/mic.fifo")
        defer { room.stop() }
        let stateDirectory = dir.path + "/state"
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
        try (server.token + "\n").write(toFile: stateDirectory + "/token", atomically: true, encoding: .utf8)
        let shown = Mutex<[SatelliteState]>([])
        let bus = EventBus(taps: [{ event in if case .state(let state, _) = event { shown.withLock { $0.append(state) } } }])
        let events = bus.subscribe(bufferingNewest: 4096)
        let keeper = StateKeeper(bus: bus)
        let pin = ServerPin(stateDirectory: stateDirectory, configuredURL: server.url, configuredToken: .state, bus: bus)
        let link = Link(tokens: TokenStore(stateDirectory: stateDirectory, environment: [:]), http: HTTPClient(bus: bus), bus: bus,
                        keeper: keeper, retryMs: 2000)
        let capture = AudioCapture(device: alsa.microphone(infile: room.path), bus: bus)
        let speaker = dir.path + "/played.raw"
        let playback = Playback(device: alsa.speaker(file: speaker), bus: bus)
        // Another satellite answers every wake until the test says otherwise.
        let arbiter = ScriptedArbiter([], then: false)
        let stream = ListenStream(settings: .init(name: "kitchen-pi", room: "kitchen", mode: .wake, retryMs: 2000,
                                                  endpointing: Endpointer.Settings(), arbitrationWindowMs: 200),
                                  link: link, capture: capture, playback: playback, bus: bus, keeper: keeper, arbiter: arbiter)
        let running = Task {
            _ = await pin.placeConfigured()
            await link.follow(await pin.current())
            async let microphone: Void = capture.run()
            async let speakerRuns: Void = playback.run()
            async let linkRuns: Void = link.run()
            async let streamRuns: Void = stream.run()
            _ = await (microphone, speakerRuns, linkRuns, streamRuns)
        }
        defer { running.cancel() }
        keeper.update { $0.started = true }
        var seen = events.makeAsyncIterator()
        /// Returns once the bus has had an event `stop` takes.
        func until(_ stop: (SatelliteEvent) -> Bool) async {
            while let event = await seen.next(), !stop(event) {}
        }
        await until { if case .state(.idle, _) = $0 { true } else { false } }

        let question = try await Speech.raw("turn off the kitchen lights", before: 0.3, after: 2)
        room.say(question)
        let lost = try #require(await arbiter.nextAsked())
        #expect(lost.probability == ListenStream.serverWakeProbability)
        #expect(lost.levelDb > -50 && lost.levelDb < 0, "the room's level before the stop, \(lost.levelDb) dBFS")
        // The socket reopens at once: the server drops the turn. (The test server's stand-in for a
        // wake word is any loud stretch, so the rest of the question may wake it again on the new
        // socket: that wake is lost too.)
        await until {
            if case .notice(_, let message, _) = $0 { message.hasPrefix("Reconnecting to the server's /listen: another satellite") } else { false }
        }
        await room.drained()
        let meanwhile = shown.withLock { $0 }
        #expect(!meanwhile.contains(.listening) && !meanwhile.contains(.thinking) && !meanwhile.contains(.speaking),
                "nothing of the lost wakes shown: \(meanwhile)")
        let played = (try? Data(contentsOf: URL(fileURLWithPath: speaker)))?.count ?? 0
        #expect(played == 0, "nothing played for the lost wakes: \(played) bytes")

        // The next wake, answered here, is answered as ever, on a new socket.
        arbiter.answer(true)
        room.say(question)
        await until { if case .reply = $0 { true } else { false } }
        let answered = shown.withLock { $0 }.dropFirst(meanwhile.count)
        #expect(answered.starts(with: [.listening, .thinking]), "\(Array(answered))")
        let log = try await server.socketLog()
        let wakes = log.filter { $0["dir"] == "event" && $0["event"] == "wake" }
        let utterances = log.filter { $0["dir"] == "event" && $0["event"] == "utterance" }
        #expect(wakes.count >= 2)
        #expect(utterances.count == 1, "only the answered wake's question was answered: \(utterances)")
        #expect(utterances.first?["conn"] == wakes.last?["conn"] && wakes.first?["conn"] != wakes.last?["conn"],
                "answered on the last wake's socket, not the first's")
        let upgrades = try await server.requests().filter { $0["path"] == "/listen" }
        #expect(upgrades.count == wakes.count, "each lost wake's socket was reopened")
        await Self.stop(running, capture)
    }
}
