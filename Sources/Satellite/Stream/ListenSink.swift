// The stream transport's microphone on the audio thread (a CaptureSink), in
// wake mode: while the room streams, each period is framed as its binary
// message and queued to the socket in the wake-up that read it, with no hop
// through Swift's pool; the socket is serviced on the audio thread too, after
// the PCMs, so the message is written into the kernel in that same wake-up.
// ListenStream stays the turn's owner: it says where periods go as its TurnMachine moves,
// and a push turn's periods, which its endpointer judges, still go to it.
// Easy to get wrong: the room's message is queued under the route's lock, so
// once ListenStream has stopped the room no message of it follows what
// ListenStream sends next (a turn's `start`).
// The server's wake is decided among the satellite's siblings: from its `stop`
// the room is kept (WakeHold) and goes up first once this satellite answers,
// so no word of the question is lost, or never once another does. The level
// the wake was heard at is the last second of the room before it (WakeLevel).
import SatelliteCore
import Synchronization

/// Sends the room from the audio thread; hands a turn's periods on to ListenStream.
final class ListenSink: CaptureSink, @unchecked Sendable {
    /// A push turn's periods (and a failure), for ListenStream to judge; it ends when the device does.
    let periods: AsyncStream<CaptureChunk>
    private let periodsIn: AsyncStream<CaptureChunk>.Continuation
    /// Where periods go: the socket the room goes up on (nil: not now), and whether to ListenStream.
    /// Taken before the socket's own queue (the message is queued under it), never under it.
    /// The room kept from a wake to its decision, and how loud the room was, with it.
    private let route: OrderedLock<Route>
    /// The audio thread's: frames the room's periods as the server's 80 ms messages.
    private var batcher = FrameBatcher()

    private struct Route: Sendable {
        var room: WebSocketClient?
        var turn = false
        var hold: WakeHold
        var level = WakeLevel()
    }

    /// `bound` is how many periods ListenStream may fall behind before the oldest are dropped;
    /// `windowMs` is how long the siblings may take to decide a wake (the room is kept that long, and a margin).
    init(bound: Int, windowMs: Int) {
        (periods, periodsIn) = AsyncStream.makeStream(of: CaptureChunk.self, bufferingPolicy: .bufferingNewest(bound))
        route = OrderedLock(Route(hold: WakeHold(windowMs: windowMs)), rank: 1, name: "the listen sink's route")
    }

    /// From now on, the room goes up on `room` (nil: it does not), and periods go to ListenStream while
    /// `turn`. With `mayOpen` false the room may stop but not start (ListenStream's actions are still
    /// to come, and the room starts only once they have been queued).
    func route(room: WebSocketClient?, turn: Bool, mayOpen: Bool) {
        route.withLock { route in
            route.turn = turn
            if room == nil || mayOpen { route.room = room }
        }
    }

    /// The server woke: from now on the room is kept. Returns the level of the last second of the room (dBFS).
    func hold() -> Double {
        route.withLock { route in
            route.hold.woke()
            return route.level.dBFS
        }
    }

    /// The siblings decided the wake: `won`, what was kept goes up first, then the room as heard;
    /// lost, nothing more of the room goes up on this socket.
    func decided(won: Bool) {
        route.withLock { route in
            guard let kept = route.hold.decided(won: won), let room = route.room else { return }
            send(kept, on: room)
        }
    }

    /// Frames `samples` as the server's 80 ms messages on `room`; under the route's lock.
    private func send(_ samples: [Int16], on room: WebSocketClient) {
        guard let blocks = batcher.add(samples) else { return }
        // What was kept goes up as the room always does, one frame a message.
        let bytes = batcher.samples * 2
        guard blocks.count > bytes else {
            _ = room.sendBinary(blocks)
            return
        }
        for start in stride(from: 0, to: blocks.count, by: bytes) {
            _ = room.sendBinary(Array(blocks[start..<min(start + bytes, blocks.count)]))
        }
    }

    func heard(_ samples: [Int16]) -> CaptureSinkVerdict {
        AudioEngine.shared.owner.assertCurrent()
        route.withLock { route in
            if let room = route.room {
                route.level.add(samples)
                if let now = route.hold.heard(samples) { send(now, on: room) }
                return
            }
            batcher.reset()
            if route.turn { periodsIn.yield(.samples(samples)) }
        }
        return .more
    }

    func ended(_ how: CaptureSinkEnd) {
        AudioEngine.shared.owner.assertCurrent()
        if case .failed(let error) = how { periodsIn.yield(.failed(error)) }
        periodsIn.finish()
    }
}
