// What a WebSocket connection (WebSocketClient) tells its consumer, and the
// back-pressure on it: the events yielded and not yet taken are counted in
// bytes, and past `WebSocketClient.maxUntakenBytes` the connection reads no
// further until the consumer catches up. Bytes, not events: a message may be
// 8 MiB, so a count of messages bounds nothing.
import SatelliteCore
import Synchronization

/// What happens on a connection, in order. `.closed`, `.failed`, `.refused` and `.dead` are the last event.
public enum WebSocketEvent: Sendable, Equatable {
    /// The handshake was accepted.
    case open
    case text(String)
    case binary([UInt8])
    /// A pong came back for a `ping()`. The keepalive pings' pongs are not events: nobody
    /// waits on them, and each would wake the conversation's task for nothing.
    case pong
    /// A message over the bound arrived and was dropped as it came, never held whole.
    /// Reported when its last byte has arrived; `bytes` is its whole size.
    case oversized(WebSocketMessageKind, bytes: Int)
    /// The connection closed after it opened. `code` is the peer's close code, 1000 when we
    /// closed it, 1002 (or 1007, 1009) when the peer broke the protocol and we closed it, or 1006
    /// when the connection dropped without a close frame.
    case closed(code: Int?, reason: String)
    /// The connection never opened: no such host, nobody listening, or a handshake the
    /// server refused (the only sign of a bad token on /listen).
    case failed(reason: String)
    /// The connection never opened, and asking the same way again is all that may be done:
    /// the handshake was answered with a redirect (`server_refused`, never followed), or the
    /// wss server showed another key than the pinned one (`server_key_changed`, nothing sent).
    case refused(SatelliteError)
    /// No sign of the peer for `WebSocketClient.deadAfter`, pings unanswered; the connection was dropped.
    case dead(reason: String)

    /// What the event holds while it waits to be taken: its payload, and a little for the event
    /// itself, so that a flood of empty messages is bounded too.
    var heldBytes: Int {
        switch self {
        case .text(let text): return 64 + text.utf8.count
        case .binary(let data): return 64 + data.count
        default: return 64
        }
    }
}

/// A connection's events; each one taken is counted off (UntakenEvents).
public struct WebSocketEvents: AsyncSequence, Sendable {
    public typealias Element = WebSocketEvent
    let stream: AsyncStream<WebSocketEvent>
    let untaken: UntakenEvents

    public struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate var base: AsyncStream<WebSocketEvent>.Iterator
        fileprivate let untaken: UntakenEvents

        public mutating func next() async -> WebSocketEvent? {
            let event = await base.next()
            if let event { untaken.taken(event) }
            return event
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> WebSocketEvent? {
            let event = await base.next(isolation: actor)
            if let event { untaken.taken(event) }
            return event
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator(), untaken: untaken) }
}

/// The bytes of a connection's events yielded and not yet taken.
final class UntakenEvents: Sendable {
    /// Held now, and the most there ever were (what a test checks the bound by).
    private let held = Mutex((now: 0, peak: 0))
    private let limit: Int
    private let engine: AudioEngine

    init(limit: Int, engine: AudioEngine) {
        self.limit = limit
        self.engine = engine
    }

    func yielded(_ event: WebSocketEvent) {
        held.withLock {
            $0.now += event.heldBytes
            $0.peak = max($0.peak, $0.now)
        }
    }

    /// One taken: the audio thread is woken to read again when that brings the bytes under the limit.
    func taken(_ event: WebSocketEvent) {
        let bytes = event.heldBytes
        if held.withLock({ held in
            let wasFull = held.now >= limit
            held.now -= bytes
            return wasFull && held.now < limit
        }) { engine.wakeUp() }
    }

    var full: Bool { held.withLock { $0.now >= limit } }
    var peak: Int { held.withLock { $0.peak } }
}
