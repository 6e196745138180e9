// The /listen reconnect rule and the 80 ms batching, without a socket.
import Foundation
import Testing
import SatelliteCore

@Suite("reconnecting to /listen")
struct ReconnectPolicyTests {
    typealias Ending = ReconnectPolicy.Ending

    @Test("errors wait 1 s doubling to the cap; ready starts again at 1 s")
    func errorsDouble() {
        var policy = ReconnectPolicy(capMs: 5000)
        let delays = [Ending.refused, .refused, .broken, .refused, .refused].map { policy.delay(after: $0) }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5)])
        policy.ready()
        #expect(policy.delay(after: .broken) == .seconds(1))
    }

    @Test("a clean close reconnects at once and resets the back-off")
    func cleanCloseAtOnce() {
        var policy = ReconnectPolicy(capMs: 15000)
        _ = policy.delay(after: .refused)
        _ = policy.delay(after: .refused)
        #expect(policy.delay(after: .clean(lived: .seconds(30))) == .zero)
        #expect(policy.delay(after: .refused) == .seconds(1))
    }

    @Test("quick clean closes in a row back off after the first", arguments: [
        ([Ending.clean(lived: .milliseconds(50)), .clean(lived: .milliseconds(50)), .clean(lived: .milliseconds(50))],
         [Duration.zero, .seconds(1), .seconds(2)]),
        ([.clean(lived: .milliseconds(50)), .clean(lived: .seconds(5)), .clean(lived: .milliseconds(50))],
         [.zero, .zero, .zero]),
        ([.clean(lived: .milliseconds(50)), .refused, .clean(lived: .milliseconds(50))],
         [.zero, .seconds(1), .zero]),
    ])
    func quickCleanCloses(endings: [Ending], delays: [Duration]) {
        var policy = ReconnectPolicy(capMs: 15000)
        #expect(endings.map { policy.delay(after: $0) } == delays)
    }
}

@Suite("batching microphone periods")
struct FrameBatcherTests {
    @Test("20 ms periods go out as 80 ms little-endian blocks; flush gives the rest")
    func batches() {
        var batcher = FrameBatcher()
        let period = (0..<320).map { Int16($0 - 160) }
        #expect(batcher.add(period) == nil)
        #expect(batcher.add(period) == nil)
        #expect(batcher.add(period) == nil)
        let block = batcher.add(period)
        #expect(block?.count == 2560)
        #expect(block.map { Array($0.prefix(2)) } == [0x60, 0xFF])  // -160
        #expect(batcher.flush() == nil)
        _ = batcher.add([1, 2])
        #expect(batcher.flush() == Array([1, 0, 2, 0]))
    }

    @Test("a long chunk gives every whole block at once; reset drops the rest")
    func longChunk() {
        var batcher = FrameBatcher(samples: 4)
        #expect(batcher.add(Array(repeating: 1, count: 10))?.count == 16)
        batcher.reset()
        #expect(batcher.flush() == nil)
    }
}
