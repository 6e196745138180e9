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
import SatelliteCore
import Synchronization

/// Sends the room from the audio thread; hands a turn's periods on to ListenStream.
final class ListenSink: CaptureSink, @unchecked Sendable {
    /// A push turn's periods (and a failure), for ListenStream to judge; it ends when the device does.
    let periods: AsyncStream<CaptureChunk>
    private let periodsIn: AsyncStream<CaptureChunk>.Continuation
    /// Where periods go: the socket the room goes up on (nil: not now), and whether to ListenStream.
    /// Taken before the socket's own queue (the message is queued under it), never under it.
    private let route = OrderedLock<(room: WebSocketClient?, turn: Bool)>((nil, false), rank: 1, name: "the listen sink's route")
    /// The audio thread's: frames the room's periods as the server's 80 ms messages.
    private var batcher = FrameBatcher()

    /// `bound` is how many periods ListenStream may fall behind before the oldest are dropped.
    init(bound: Int) {
        (periods, periodsIn) = AsyncStream.makeStream(of: CaptureChunk.self, bufferingPolicy: .bufferingNewest(bound))
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

    func heard(_ samples: [Int16]) -> CaptureSinkVerdict {
        AudioEngine.shared.owner.assertCurrent()
        route.withLock { route in
            if let room = route.room {
                if let message = batcher.add(samples) { _ = room.sendBinary(message) }
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
