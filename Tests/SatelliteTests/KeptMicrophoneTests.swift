// The microphone kept open while the echo is cancelled, against real ALSA (the
// file plugin over the paced test card, reading a numbered ramp, so where each
// chunk comes from in the file says whether the device was reopened and what
// was dropped).
import Foundation
import Testing
import SatelliteCore
@testable import Satellite

@Suite("the microphone kept open while the echo is cancelled", .timeLimit(.minutes(1)))
struct KeptMicrophoneTests {
    private static let kept = "The microphone is kept open while the echo is cancelled"

    private func engine(cancelling: Bool) -> AudioEngine {
        let engine = AudioEngine()
        engine.process(AudioProcessing(echoCancel: cancelling, noiseSuppression: !cancelling, autoGain: false)) { _, _, _ in }
        return engine
    }

    /// How many times the bus said the microphone was opened to be kept, before `marker` (published
    /// now, after whatever the bus had from before).
    private func openings(_ events: inout AsyncStream<SatelliteEvent>.Iterator, bus: EventBus, marker: String) async -> Int {
        bus.notice(.debug, marker)
        var count = 0
        while let event = await events.next() {
            guard case .notice(_, let message, _) = event else { continue }
            if message == marker { break }
            if message.hasPrefix(Self.kept) { count += 1 }
        }
        return count
    }

    private func next(_ iterator: inout AsyncStream<CaptureChunk>.Iterator) async -> [Int16]? {
        if case .samples(let samples)? = await iterator.next() { return samples }
        return nil
    }

    @Test("opened once, by the first consumer; each after it, stream or sink, takes it in turn with nothing heard before it asked; muted, it closes")
    func keptForEveryConsumer() async throws {
        let alsa = try ALSAFixture.shared()
        let infile = alsa.path("kept-ramp.raw")
        // Long enough that a slow pass does not read past its end into the card's silence.
        // A staircase, not NumberedRamp: its places repeat every 4 s, and a loaded machine can put more
        // than that between two chunks (twice so in CI). Each step of 16 samples names its place for
        // 65 s, longer than the file.
        try alsa.writeRaw((0..<16000 * 40).map { Int16(truncatingIfNeeded: $0 / 16) }, to: infile)
        let place = { (sample: Int16) in Int(UInt16(bitPattern: sample)) * 16 }
        let bus = EventBus()
        var events = bus.subscribe().makeAsyncIterator()
        let capture = AudioCapture(device: alsa.microphone(infile: infile), bus: bus, keptPeriod: 960, engine: engine(cancelling: true))
        async let _ = capture.run()
        #expect(await capture.probe().ok == true)
        #expect(await capture.isKeptOpen == false, "the probe opens and closes it")

        // A push turn asks for 20 ms periods and gets the kept device's 60 ms.
        var first = try await capture.open(periodFrames: 320).makeAsyncIterator()
        guard let chunk = await next(&first) else { Issue.record("no sound"); return }
        #expect(chunk.count == 960, "the device kept open, with its period")
        await capture.close()
        while await first.next() != nil {}
        #expect(await capture.isKeptOpen, "the consumer gone, the device reads on")

        // What it hears while nobody listens is dropped: a listener in sees it read on meanwhile.
        var heard: [Int16] = []
        for await copy in try await capture.listenIn(for: .milliseconds(300)) { if case .samples(let s) = copy { heard = s } }
        var second = try await capture.open(periodFrames: 320).makeAsyncIterator()
        guard let after = await next(&second) else { Issue.record("no sound for the second consumer"); return }
        // Not the top of the file again (reopened), nor what came before the listener's last chunk
        // (kept for it): at or after it, to the staircase's step of 16 samples.
        let ahead = place(after.first ?? 0) - place(heard.last ?? 0)
        #expect(after.contains { $0 != 0 }, "the ramp, not silence")
        #expect(place(after.first ?? 0) != 0 && ahead >= 0, "the second consumer starts after what nobody asked for: \(place(after.first ?? 0)) after \(place(heard.last ?? 0))")

        // A sink takes it from the stream, which ends.
        let sink = Sink()
        _ = try await capture.open(periodFrames: 1920, into: sink)
        while await second.next() != nil {}
        for await size in sink.sizes { #expect(size == 960); break }
        #expect(await openings(&events, bus: bus, marker: "every consumer served") == 1, "opened once for all")

        await capture.setMuted(true)
        #expect(await capture.isKeptOpen == false, "muted, it is closed")
        await capture.setMuted(false)
        #expect(await capture.isKeptOpen == false, "unmuted, it waits for a consumer")
        _ = try await capture.open(periodFrames: 320)
        #expect(await capture.isKeptOpen, "and is kept open again")
        #expect(await openings(&events, bus: bus, marker: "unmuted") == 1, "opened afresh once unmuted")
        await capture.close()
    }

    @Test("with the echo not cancelled, it is opened for each consumer and closed after, as before")
    func notKeptWithoutCancelling() async throws {
        let alsa = try ALSAFixture.shared()
        let infile = alsa.path("kept-ramp-off.raw")
        try alsa.writeRaw(NumberedRamp.samples(64000), to: infile)
        let bus = EventBus()
        var events = bus.subscribe().makeAsyncIterator()
        let capture = AudioCapture(device: alsa.microphone(infile: infile), bus: bus, keptPeriod: 960, engine: engine(cancelling: false))
        async let _ = capture.run()
        #expect(await capture.probe().ok == true)
        #expect(await capture.isKeptOpen == false)
        var stream = try await capture.open(periodFrames: 320).makeAsyncIterator()
        #expect(await next(&stream)?.count == 320, "opened with the period asked for")
        await capture.close()
        #expect(await capture.isKeptOpen == false)
        #expect(await openings(&events, bus: bus, marker: "done") == 0)
    }

    /// A sink that tells the size of each period it hears.
    private final class Sink: CaptureSink {
        let sizes: AsyncStream<Int>
        private let out: AsyncStream<Int>.Continuation
        init() { (sizes, out) = AsyncStream.makeStream(of: Int.self) }
        func heard(_ samples: [Int16]) -> CaptureSinkVerdict {
            out.yield(samples.count)
            return .more
        }
        func ended(_ how: CaptureSinkEnd) { out.finish() }
    }
}
