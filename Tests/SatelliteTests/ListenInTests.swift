// AudioCapture.listenIn against real ALSA (the file plugin over the paced test
// card): doctor and the level meter hear the microphone without taking it from
// the one consumer, and give it up the moment a consumer wants it.
import Foundation
import Synchronization
import Testing
import SatelliteCore
import Satellite

@Suite("listening in on the microphone", .timeLimit(.minutes(1)))
struct ListenInTests {
    private func samples(_ chunk: CaptureChunk?) -> [Int16]? {
        if case .samples(let s)? = chunk { return s }
        return nil
    }

    @Test("while a consumer holds the microphone, listening in gets a copy of its chunks, and the consumer goes on")
    func copiesTheConsumer() async throws {
        let alsa = try ALSAFixture.shared()
        let infile = alsa.path("ramp.raw")
        // Ten seconds: the file plugin reads nothing past the infile's end, and the device then ends, so a test
        // starved for longer than the recording (two seconds once, at a load of 16) would copy nothing. Chunks
        // repeat after 65536 samples, which the checks below allow: a repeat has the same samples.
        try alsa.writeRaw(NumberedRamp.samples(160_000), to: infile)
        let capture = AudioCapture(device: alsa.microphone(infile: infile), bus: EventBus())
        async let _ = capture.run()
        let consumer = try await capture.open()
        // The consumer reads all along, as the stream transport does, so that a starved test cannot
        // leave it more than its two-second backlog behind (it would then lose the oldest chunks).
        let (started, gotFirst) = AsyncStream.makeStream(of: Void.self)
        let until = Mutex<[Int16]?>(nil)
        let reading = Task { () -> (seen: [[Int16]], goesOn: Bool) in
            var seen: [[Int16]] = []
            var sawLast = false
            for await chunk in consumer {
                guard case .samples(let s) = chunk else { return (seen, false) }
                // One more after the last copied chunk: the microphone is still the consumer's.
                if sawLast { return (seen, true) }
                seen.append(s)
                if seen.count == 1 { gotFirst.yield() }
                if let last = until.withLock({ $0 }), seen.contains(last) { sawLast = true }
                if seen.count > 3000 { break }
            }
            return (seen, false)
        }
        for await _ in started { break }

        let copies = try await capture.listenIn(for: .milliseconds(200))
        var copied: [[Int16]] = []
        for await chunk in copies { if let s = samples(chunk) { copied.append(s) } }
        #expect(copied.count == 10, "200 ms of 20 ms periods")
        until.withLock { $0 = copied.last ?? [] }

        // The consumer got every one of those chunks too, and goes on getting more.
        let consumed = await reading.value
        #expect(copied.allSatisfy(consumed.seen.contains), "each copied chunk was the consumer's")
        #expect(consumed.goesOn, "the microphone is still the consumer's")
        await capture.close()
    }

    @Test("alone, listening in opens the microphone, and a consumer's open takes it over at once")
    func givesWay() async throws {
        let alsa = try ALSAFixture.shared()
        let infile = alsa.path("ramp.raw")
        try alsa.writeRaw(NumberedRamp.samples(16000), to: infile)
        let capture = AudioCapture(device: alsa.microphone(infile: infile), bus: EventBus())
        async let _ = capture.run()
        var listening = try await capture.listenIn(for: .seconds(10)).makeAsyncIterator()
        // (Its exact samples are not compared: on a loaded machine the paced card may overrun at
        // once, and the file plugin then no longer lines the infile up with the periods.)
        #expect(samples(await listening.next())?.count == 320)

        let consumer = try await capture.open()
        var heard = 1
        while let chunk = await listening.next() {
            if case .failed(let error) = chunk { Issue.record("giving way reported \(error)") }
            heard += 1
        }
        // What it still had buffered comes out, then it ends: far short of 10 s (500 periods).
        #expect(heard <= 250, "the listener stopped long before its 10 s: \(heard) periods")
        var iterator = consumer.makeAsyncIterator()
        #expect(samples(await iterator.next()) != nil, "the consumer has the microphone")
        await capture.close()
    }
}

@Suite("handing the microphone over", .timeLimit(.minutes(1)))
struct HandOverTests {
    @Test("after handOver the next open takes the device still open: the handed chunk first, then the ones after it")
    func noGap() async throws {
        let alsa = try ALSAFixture.shared()
        let infile = alsa.path("ramp.raw")
        try alsa.writeRaw(NumberedRamp.samples(64000), to: infile)
        let place = NumberedRamp.place
        let capture = AudioCapture(device: alsa.microphone(infile: infile), bus: EventBus())
        async let _ = capture.run()
        var first = try await capture.open(periodFrames: 960).makeAsyncIterator()
        var last: [Int16] = []
        for _ in 0..<5 {
            guard case .samples(let chunk)? = await first.next() else { Issue.record("no sound"); return }
            last = chunk
        }
        #expect(await capture.handOver(startingWith: last))
        // The first consumer's stream ends; the device does not.
        while let chunk = await first.next() { if case .failed(let error) = chunk { Issue.record("\(error)") } }

        var second = try await capture.open(periodFrames: 320).makeAsyncIterator()
        guard case .samples(let again)? = await second.next(), case .samples(let next)? = await second.next() else {
            Issue.record("the second consumer got no sound")
            return
        }
        #expect(again == last, "the handed chunk comes first")
        #expect(next.count == 960, "the device kept its period: it was not reopened")
        // A reopened file would start at the top again. (Straight on, one sample later, unless a
        // loaded machine made the paced card overrun meanwhile.)
        let was = place(last.last ?? 0), now = place(next.first ?? 0)
        // (A period of silence is the paced card after an overrun; a reopened file would give the ramp's top, not silence.)
        #expect(now > was || next.allSatisfy { $0 == 0 }, "the next chunk goes on from sample \(was), not from the top: \(now)")
        await capture.close()
    }

    @Test("a hand-over nobody takes is dropped, and the next open opens the device afresh")
    func dropped() async throws {
        let alsa = try ALSAFixture.shared()
        let infile = alsa.path("ramp.raw")
        try alsa.writeRaw([Int16](repeating: 5, count: 64000), to: infile)
        let capture = AudioCapture(device: alsa.microphone(infile: infile), bus: EventBus())
        async let _ = capture.run()
        var first = try await capture.open(periodFrames: 960).makeAsyncIterator()
        _ = await first.next()
        #expect(await capture.handOver())
        await capture.dropHandOver()
        var fresh = try await capture.open(periodFrames: 320).makeAsyncIterator()
        guard case .samples(let chunk)? = await fresh.next() else { Issue.record("no sound"); return }
        #expect(chunk.count == 320, "opened afresh with the period asked for")
        await capture.close()
    }
}
