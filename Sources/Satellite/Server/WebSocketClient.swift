// One WebSocket connection (RFC 6455, the client's side) for the /listen
// stream, driven on the audio thread (AudioEngine) beside the PCMs: a period
// the microphone gave is framed and written into the socket in the wake-up
// that read it, so streaming costs one wake-up a period. Written here rather
// than with libwebsockets: Debian's lws 4.1.6 is built without
// LWS_WITH_EXTERNAL_POLL, so its loop needed a thread of its own, woken for
// every message: 35 wake-ups a second streaming against 12.5 periods
// (BENCHMARKS.md, "The socket on the audio thread", has the figures since).
// What it does: connect (ClientConnection: TCP, and TLS for wss), the upgrade
// request and its answer, frames both ways (WebSocketFrame builds and masks
// ours), pings, and the close handshake.
// Easy to get wrong: nothing here may block the audio thread (the name look-up
// and loading the CA store happen before, on the look-up thread); a redirect is
// an answer, never followed (the token would go with it); a pinned wss key is
// checked before a byte of the request is written; a message over its bound is
// dropped as it comes, never held; a peer that floods is read a bounded amount
// a wake-up, so the microphone never waits on it.
import COpenSSL
import Glibc
import SatelliteCore
import Synchronization

/// What happens on a connection, in order. `.closed`, `.failed` and `.dead` are the last event.
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
    /// closed it, 1002 when the peer broke the protocol and we closed it, or 1006 when the
    /// connection dropped without a close frame.
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
}

public enum WebSocketMessageKind: String, Sendable {
    case text, binary
}

/// A WebSocket client connection.
///
/// Threads: `connect` resolves the name and loads the CA store on `BlockingThread.lookups`,
/// then hands the connection to the audio thread, which does all its I/O and owns every
/// field below "The audio thread's". `sendText`, `sendBinary`, `ping` and `close` may be
/// called from any thread: they queue under `shared`'s lock and wake the audio thread,
/// unless they are called on it (the microphone's sink), which then writes in the same wake-up.
public final class WebSocketClient: AudioEngineSocket, @unchecked Sendable {
    /// What happens on the connection. Ends after the last event. Call `close()` when done with it:
    /// a consumer that only stops iterating leaves the connection up, and unread (`maxUntaken`).
    public let events: WebSocketEvents

    /// How long a connection may go without a sign of the peer before it counts as dead: 10 s (a test may set it smaller, TestBounds).
    public static let deadAfter: Duration = .seconds(TestBounds.deadPeerSeconds(getenv(TestBounds.deadPeerVariable).map { String(cString: $0) }))
    /// How long after the peer's last frame a ping is sent, and again after each unanswered one.
    static let pingAfter: Duration = .seconds(3)
    /// How late a keepalive ping may go while periods wake the thread (one is at most 80 ms).
    static let periodSlack: UInt64 = 200_000_000
    /// The most bytes queued but not yet written. About 32 s of 16 kHz audio: a healthy
    /// connection never comes near it, and a dead one is found in 10 s.
    public static let maxQueuedBytes = 1 << 20
    /// How long connecting, TLS and the upgrade may take together.
    static let openWithin: Duration = .seconds(10)
    /// How long our close waits for the peer's.
    static let closeWithin: Duration = .seconds(2)
    /// The most bytes an answer to the upgrade may have.
    static let maxAnswerBytes = 16384
    /// The most bytes read in one wake-up: a peer that floods cannot keep the microphone waiting.
    static let maxReadPerWake = 256 << 10
    /// The most events not yet taken by the consumer: past it nothing more is read until it
    /// catches up, so a peer sending faster than the conversation takes it holds no more memory.
    static let maxUntaken = 64
    private let continuation: AsyncStream<WebSocketEvent>.Continuation
    private let url: String
    /// The wss server's pinned public key (`sha256/<base64>`), checked once TLS is up.
    private let pinnedKey: String?
    private let maxText: Int
    private let maxBinary: Int
    private let engine = AudioEngine.shared
    private let shared = Mutex(Shared())
    private let untaken: UntakenEvents

    /// What other threads hand to the audio thread.
    private struct Shared {
        /// Whole frames, masked, in the order they are to go.
        var outgoing: [[UInt8]] = []
        /// Bytes queued (here or in `out`) and not yet written.
        var unwritten = 0
        var wantPing = false
        var wantClose = false
        var ended = false
    }

    /// What `prepare` found on the look-up thread; the audio thread's from `attach` on.
    private struct Plan {
        var target: ServerTarget
        var addresses: [NameLookup.Address]
        /// wss only: the context, with the CA store loaded (unless a key is pinned).
        var tls: OpaquePointer?
        /// Whether the host is an address (no SNI then).
        var hostIsAddress: Bool
    }

    /// `connecting` takes in TCP and TLS (ClientConnection).
    private enum Phase { case waiting, connecting, upgrading, open, closing, finished }

    /// One incoming message being put together from its frames.
    private struct Assembly {
        let kind: WebSocketMessageKind
        var bytes = 0
        var data: [UInt8] = []
        var dropping = false
    }

    // The audio thread's (and `prepare`'s, before it hands over).
    private var plan: Result<Plan, WebSocketError>
    private var phase = Phase.waiting
    private var connection: ClientConnection?
    private var acceptKey = ""
    /// Frames to write (the request first), from `out[outHead]`'s byte `outAt` on: a frame a
    /// send() each, as a tracer of the socket counts them (scripts/bench-preload.c).
    private var out: [[UInt8]] = []
    private var outHead = 0
    private var outAt = 0
    /// Bytes read and not yet taken apart.
    private var input: [UInt8] = []
    private var scratch = [UInt8](repeating: 0, count: 65536)
    /// More may be waiting to be read: serviced again at once rather than after a poll.
    private var readMore = false
    /// Reading stopped because the consumer was behind: read (and parse what is in `input`) as
    /// soon as it catches up, whatever poll says, before the peer's silence is judged.
    private var readsPaused = false
    /// Whether the upgrade was accepted: only then is a TLS close notify sent.
    private var opened = false
    /// `out[outHead]` is a pong not yet wholly written: there is never more than one.
    private var pongQueued = false
    private var openBy: UInt64 = 0
    private var closeBy: UInt64 = 0
    private var lastProof: UInt64 = 0
    private var nextPing: UInt64 = 0
    /// When the first ping since the peer last sent anything went; nil while none is unanswered.
    private var pingSentAt: UInt64?
    /// When the socket was last read for a pong awaited on the periods (or the ping went).
    private var pongReadAt: UInt64 = 0
    /// A `ping()` is unanswered: its pong is an event (a keepalive's, or one nobody asked for, is not).
    private var awaitingPong = false
    /// The peer's ping waiting to be answered: one at most, the latest (RFC 6455, 5.5.3).
    private var pongDue: [UInt8]?
    /// The peer's close, once it came: its code and reason stand whatever happens after.
    private var peerClose: (code: Int, reason: String)?
    /// Where the search for the end of the answer's head goes on from.
    private var headSearchedTo = 0
    private var message: Assembly?
    /// What is left of the data frame being read, and whether it is its message's last.
    private var payloadLeft = 0
    private var payloadFinal = false

    /// Opens a connection to a `ws://` or `wss://` URL (wss checks the server's certificate
    /// against the system's CA store). `headers` go on the upgrade request, for example
    /// `Authorization: Bearer …`. A binary message over `maxMessage` bytes, or a text message
    /// over `maxText`, is dropped and reported as `.oversized`. Returns at once; the outcome
    /// of connecting is the first event.
    /// With `key` (wss only), the server must show that public key, whoever signed its certificate.
    /// With `addresses`, those are tried in order rather than what the host name resolves to now; the name still goes in Host.
    public static func connect(url: String, headers: [String: String], maxMessage: Int,
                               maxText: Int = 4096, key: String? = nil, addresses: [String] = []) -> WebSocketClient {
        let client = WebSocketClient(url: url, maxMessage: maxMessage, maxText: maxText, key: key)
        BlockingThread.lookups.submit { client.prepare(headers: headers, addresses: addresses) }
        return client
    }

    private init(url: String, maxMessage: Int, maxText: Int, key: String?) {
        pinnedKey = key
        let (stream, continuation) = AsyncStream.makeStream(of: WebSocketEvent.self, bufferingPolicy: .unbounded)
        self.continuation = continuation
        let untaken = UntakenEvents(limit: Self.maxUntaken, engine: AudioEngine.shared)
        self.untaken = untaken
        events = WebSocketEvents(stream: stream, taken: untaken.taken)
        self.url = url
        self.maxText = maxText
        self.maxBinary = maxMessage
        plan = .failure(WebSocketError(function: "connect", detail: "not prepared"))
        continuation.onTermination = { [weak self] _ in self?.close() }
    }

    /// Queues a text message. Text is never refused for space: control messages are tiny, and
    /// losing an `end` or `spoke` would put the two sides out of step. False once the connection has ended.
    @discardableResult
    public func sendText(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return enqueue(bytes.withUnsafeBytes { WebSocketFrame.masked(.text, $0, key: Self.maskKey()) }, bounded: false)
    }

    /// Queues a binary message. When `maxQueuedBytes` are already waiting, the message is
    /// refused and false returned: the peer is not keeping up (or is dead, which the pings will
    /// show), and refusing the newest keeps what was queued, and any control message after it,
    /// in order. The caller decides whether a gap in the audio matters.
    @discardableResult
    public func sendBinary(_ data: [UInt8]) -> Bool {
        enqueue(data.withUnsafeBytes { WebSocketFrame.masked(.binary, $0, key: Self.maskKey()) }, bounded: true)
    }

    /// Sends a ping now; `.pong` follows if the peer is alive. Keepalive pings also go by themselves, unreported.
    public func ping() {
        change { $0.wantPing = true }
    }

    /// Closes the connection with 1000, after writing what was already queued; the events end
    /// with `.closed`. Nothing can be queued after it.
    public func close() {
        change { $0.wantClose = true }
    }

    private func enqueue(_ frame: [UInt8], bounded: Bool) -> Bool {
        let queued = shared.withLock { state in
            guard !state.ended, !state.wantClose else { return false }
            if bounded && state.unwritten + frame.count > Self.maxQueuedBytes { return false }
            state.outgoing.append(frame)
            state.unwritten += frame.count
            return true
        }
        if queued { wake() }
        return queued
    }

    private func change(_ body: (inout Shared) -> Void) {
        let changed = shared.withLock { state in
            guard !state.ended else { return false }
            body(&state)
            return true
        }
        if changed { wake() }
    }

    /// On the audio thread the socket is serviced after the PCMs in this same wake-up; from elsewhere it is woken.
    private func wake() {
        if !engine.isCurrent { engine.wakeUp() }
    }

    private static func maskKey() -> UInt32 { UInt32.random(in: .min ... .max) }

    // MARK: Before the audio thread: on BlockingThread.lookups

    /// Resolves the name (getaddrinfo may wait on DNS), loads the CA store for wss (tens of
    /// milliseconds), builds the request, then hands the connection to the audio thread.
    private func prepare(headers: [String: String], addresses pinned: [String]) {
        plan = Result { () throws(WebSocketError) in
            let target: ServerTarget
            do throws(ServerTarget.Unusable) {
                target = try ServerTarget(url: url, schemes: ("ws", "wss"))
            } catch {
                throw .badURL(error.reason)
            }
            // A pin over plain ws:// would vouch for nothing, and the token would go in the clear.
            if pinnedKey != nil && !target.secure { throw .badURL("a pinned key needs wss://") }
            var request = "GET \(target.pathAndQuery) HTTP/1.1\r\nHost: \(target.hostHeader)\r\n"
                + "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            var nonce = [UInt8](repeating: 0, count: 16)
            for index in nonce.indices { nonce[index] = .random(in: .min ... .max) }
            let key = Base64.encode(nonce)
            request += "Sec-WebSocket-Key: \(key)\r\n"
            do throws(HTTPHead.BadHeader) {
                request += try HTTPHead.lines(headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }) + "\r\n"
            } catch {
                throw WebSocketError(function: "headers", detail: error.reason)
            }
            out = [Array(request.utf8)]
            acceptKey = Self.accept(key)
            let found = pinned.isEmpty ? NameLookup.resolve(target.name, port: target.port, numeric: false)
                : pinned.flatMap { NameLookup.resolve($0, port: target.port, numeric: true) }
            guard !found.isEmpty else {
                throw WebSocketError(function: "connect", detail: "\(target.name) does not resolve to an address")
            }
            var tls: OpaquePointer?
            if target.secure {
                do throws(ClientConnection.Failure) {
                    tls = try ClientConnection.tlsContext(verifying: pinnedKey == nil)
                } catch {
                    throw WebSocketError(function: "tls", detail: error.description)
                }
            }
            return Plan(target: target, addresses: found, tls: tls,
                        hostIsAddress: !NameLookup.resolve(target.name, port: target.port, numeric: true).isEmpty)
        }
        shared.withLock { $0.unwritten += out.first?.count ?? 0 }
        engine.attach(socket: self)
    }

    /// The Sec-WebSocket-Accept a server must answer `key` with (RFC 6455, 4.2.2).
    private static func accept(_ key: String) -> String {
        Base64.encode(SHA1.digest(Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)))
    }

    // MARK: The audio thread

    func pollRequest(periodic: Bool) -> pollfd? {
        guard let connection, connection.fd >= 0 else { return nil }
        switch phase {
        case .connecting: return pollfd(fd: connection.fd, events: connection.events(writing: false), revents: 0)
        case .upgrading, .open, .closing:
            var events = connection.events(writing: outHead < out.count || pongDue != nil)
            // The pong of a keepalive ping is read in the next period's wake-up, not in one of its own.
            if awaitsPongOnPeriods(periodic) && !connection.writeWaitsOnRead {
                events &= ~Int16(POLLIN)
                if events == 0 { return nil }
            }
            // Not read while the consumer is behind (it wakes the thread as it catches up); nor polled
            // at all then unless something is to be written, or a hang-up would be reported at once, again and again.
            if untaken.full && !connection.writeWaitsOnRead {
                return events & Int16(POLLOUT) != 0 ? pollfd(fd: connection.fd, events: Int16(POLLOUT), revents: 0) : nil
            }
            return pollfd(fd: connection.fd, events: events, revents: 0)
        case .waiting, .finished: return nil
        }
    }

    func socketDeadline(periodic: Bool) -> UInt64? {
        switch phase {
        case .waiting, .finished: return 0
        case .connecting: return min(openBy, connection?.addressBy ?? .max)
        case .upgrading: return openBy
        case .open:
            // A keepalive ping can go a period late: it goes in a period's wake-up, and only a
            // microphone that stopped waking the thread leaves it to this deadline. So does the read
            // of its pong, which a stalled microphone would otherwise leave to the next ping.
            let ping = periodic ? nextPing + Self.periodSlack : nextPing
            if untaken.full { return ping }
            let pong = awaitsPongOnPeriods(periodic) ? pongReadAt + Self.periodSlack : UInt64.max
            return readMore ? 0 : min(ping, pong, deadAt ?? .max)
        case .closing: return readMore && !untaken.full ? 0 : closeBy
        }
    }

    func service(socketEvents: Int16, now: UInt64, periodic: Bool) -> Bool {
        if phase == .waiting { begin(now) }
        if phase == .connecting || phase == .upgrading {
            if shared.withLock({ $0.wantClose }) {
                finish(.closed(code: nil, reason: "closed by this side before it opened"))
            } else if now >= openBy {
                fail("connect", "no answer within \(Self.openWithin.components.seconds) s")
            }
        }
        if phase == .connecting, let connection { progress(connection.advance(events: socketEvents, now: now)) }
        // Read only when poll said so (or a read left more, or a pong is awaited on the periods):
        // a period's wake-up costs no recv.
        if (phase == .open || phase == .closing) && readsPaused && !untaken.full {
            readsPaused = false
            frames(now)
            if phase == .open || phase == .closing { receive(now) }
        } else if connectedPhase {
            let pongOnPeriods = awaitsPongOnPeriods(periodic)
            if pongOnPeriods { pongReadAt = now }
            if socketEvents != 0 || readMore || pongOnPeriods { receive(now) }
        }
        if phase == .open { takeQueued(now) }
        if phase == .open { keepAlive(now) }
        if phase == .closing && now >= closeBy { finish(.closed(code: 1000, reason: "closed by this side")) }
        if connectedPhase { flush() }
        return phase != .finished
    }

    /// Whether a keepalive ping is unanswered while periods wake the thread: then the socket is
    /// not polled for reading, and read in each wake-up instead (one read, as the pong is quick).
    private func awaitsPongOnPeriods(_ periodic: Bool) -> Bool {
        periodic && phase == .open && pingSentAt != nil && !untaken.full
    }

    /// TCP (and TLS) up, the connection not finished: there is a socket to read and write.
    private var connectedPhase: Bool { phase == .upgrading || phase == .open || phase == .closing }

    private func begin(_ now: UInt64) {
        openBy = now + MonotonicClock.nanoseconds(in: Self.openWithin)
        switch plan {
        case .failure(let error): finish(.failed(reason: error.description))
        case .success(let plan):
            let security = plan.tls.map {
                // Without a pinned key the certificate must name the host (or hold its address).
                ClientConnection.Security(context: $0, serverName: plan.target.name, hostIsAddress: plan.hostIsAddress,
                                          pinnedKey: pinnedKey, checkHost: pinnedKey == nil)
            }
            let connection = ClientConnection(addresses: plan.addresses, security: security)
            self.connection = connection
            phase = .connecting
            progress(connection.start(now))
        }
    }

    /// Where connecting got to: on to the upgrade once TCP (and TLS, with the pinned key shown) is up.
    private func progress(_ progress: ClientConnection.Progress) {
        switch progress {
        case .working: return
        case .ready: phase = .upgrading
        case .failed(.keyChanged(let shown)):
            finish(.refused(ServerKey.changed(url: ServerAnswers.displayURL(url), shown: shown, pinned: pinnedKey ?? "")))
        case .failed(.clockWrong(let now)):
            finish(.refused(ServerAnswers.clockWrong(url: ServerAnswers.displayURL(url), now: now)))
        case .failed(.connect(let why)): fail("connect", why)
        case .failed(let failure): fail("tls", failure.description)
        }
    }

    /// Reads what the socket has, up to `maxReadPerWake`, and takes it apart.
    private func receive(_ now: UInt64) {
        readMore = false
        var total = 0
        while connectedPhase, let connection {
            // The consumer is behind: read on once it catches up (it wakes the thread).
            if untaken.full {
                readsPaused = true
                return
            }
            guard total < Self.maxReadPerWake else {
                readMore = true
                return
            }
            let count = scratch.withUnsafeMutableBytes { connection.read(into: $0) }
            switch count {
            case .bytes(let count):
                total += count
                // Any byte is a sign of the peer: a pong stuck behind a long message over a slow link is not its death.
                lastProof = now
                nextPing = now + MonotonicClock.nanoseconds(in: Self.pingAfter)
                pingSentAt = nil
                input.append(contentsOf: scratch[..<count])
                if phase == .upgrading { answered(now) } else { frames(now) }
            case .wait: return
            case .end(let why): ended(why)
            }
        }
    }

    /// Writes what is queued, as far as the socket takes it.
    private func flush() {
        var written = 0
        while true {
            // The peer's ping is answered once all before it went: a flood of pings costs one pong.
            // Answered before the next frame (after the one being written), and only one pong at a time.
            if outAt == 0, !pongQueued, let payload = pongDue {
                pongDue = nil
                queueControl(.pong, payload, at: outHead)
                pongQueued = true
            }
            guard outHead < out.count, let connection else { break }
            let result = out[outHead].withUnsafeBytes { connection.write(UnsafeRawBufferPointer(rebasing: $0[outAt...])) }
            guard case .bytes(let count) = result else {
                if case .end(let why) = result { ended(why) }
                break
            }
            outAt += count
            written += count
            if outAt == out[outHead].count {
                outHead += 1
                outAt = 0
                pongQueued = false
            }
        }
        if outHead == out.count {
            out.removeAll(keepingCapacity: true)
            outHead = 0
        } else if outHead >= 64 {
            out.removeFirst(outHead)
            outHead = 0
        }
        if written > 0 { shared.withLock { $0.unwritten -= written } }
    }

    /// The connection's far end closed or failed: what that means depends on how far it got.
    private func ended(_ why: String?) {
        if let peerClose {
            finish(.closed(code: peerClose.code, reason: peerClose.reason))
            return
        }
        switch phase {
        case .closing: finish(.closed(code: 1000, reason: "closed by this side"))
        case .open: finish(.closed(code: 1006, reason: "the connection dropped without a close frame"))
        default:
            fail("connect", "the server hung up before it accepted the upgrade" + (why.map { " (\($0))" } ?? ""))
        }
    }

    /// The answer to the upgrade, once all of its head is in.
    private func answered(_ now: UInt64) {
        guard let end = HTTPHead.end(in: input, searchedTo: &headSearchedTo) else {
            if input.count > Self.maxAnswerBytes {
                fail("handshake", "the server's answer has no end within \(Self.maxAnswerBytes) bytes")
            }
            return
        }
        let answer = AnswerHead(input[..<(end - 4)])
        input.removeFirst(end)
        switch answer.status {
        case 101:
            guard answer.header("upgrade")?.lowercased() == "websocket",
                  answer.lists("connection", "upgrade"),
                  answer.header("sec-websocket-accept") == acceptKey else {
                fail("handshake", "the server's answer is not a WebSocket upgrade")
                return
            }
            // Nothing was asked for, so nothing may be chosen: a compressed frame would not be read right.
            guard answer.header("sec-websocket-extensions") == nil, answer.header("sec-websocket-protocol") == nil else {
                fail("handshake", "the server chose an extension or subprotocol this client did not ask for")
                return
            }
            // The read that brought the answer has set lastProof and nextPing already.
            phase = .open
            opened = true
            emit(.open)
            frames(now)
        case let status? where (300..<400).contains(status):
            finish(.refused(Redirect.refusal(status: status, location: answer.header("location"), base: url, route: "/listen")))
        case let status?:
            fail("handshake", "the server answered with HTTP status \(status)")
        case nil:
            fail("handshake", "the server's answer is not HTTP")
        }
    }

    /// Takes the frames in `input` apart, as far as they have come.
    private func frames(_ now: UInt64) {
        var at = 0
        defer { if at > 0 { input.removeFirst(min(at, input.count)) } }
        while phase == .open || phase == .closing {
            // The consumer is behind: the rest waits in `input` (one read could hold 32,768 empty frames).
            if untaken.full {
                readsPaused = true
                return
            }
            if payloadLeft > 0 {
                let take = min(payloadLeft, input.count - at)
                guard take > 0 else { return }
                if message?.dropping == false { message?.data.append(contentsOf: input[at ..< at + take]) }
                at += take
                payloadLeft -= take
                if payloadLeft == 0 && payloadFinal { delivered() }
                continue
            }
            let available = input.count - at
            guard available >= 2 else { return }
            let first = input[at], second = input[at + 1]
            var length = Int(second & 0x7f)
            var headSize = 2
            if length == 126 {
                guard available >= 4 else { return }
                length = Int(input[at + 2]) << 8 | Int(input[at + 3])
                headSize = 4
            } else if length == 127 {
                guard available >= 10 else { return }
                var wide: UInt64 = 0
                for index in 0..<8 { wide = wide << 8 | UInt64(input[at + 2 + index]) }
                guard wide <= UInt64(Int32.max) else { return broken("a frame longer than 2 GiB") }
                length = Int(wide)
                headSize = 10
            }
            guard second & 0x80 == 0 else { return broken("a masked frame") }
            guard first & 0x70 == 0 else { return broken("a frame with reserved bits set") }
            let opcode = first & 0x0f, final = first & 0x80 != 0
            if opcode >= 8 {
                guard final, length <= 125 else { return broken("a control frame fragmented or over 125 bytes") }
                guard available >= headSize + length else { return }
                let payload = Array(input[at + headSize ..< at + headSize + length])
                at += headSize + length
                control(opcode, payload, now)
                continue
            }
            switch opcode {
            case 1, 2:
                guard message == nil else { return broken("a new message before the last one ended") }
                message = Assembly(kind: opcode == 1 ? .text : .binary)
            case 0:
                guard message != nil else { return broken("a continuation with no message") }
            default:
                return broken("a frame of unknown kind \(opcode)")
            }
            at += headSize
            // In place: a copy of the message for each of many small fragments would cost their square.
            let limit = message?.kind == .text ? maxText : maxBinary
            if message?.dropping == false && (message?.bytes ?? 0) + length > limit {
                message?.dropping = true
                message?.data = []
            }
            if opcode != 0 && message?.dropping == false { message?.data.reserveCapacity(length) }
            message?.bytes += length
            payloadLeft = length
            payloadFinal = final
            if length == 0 && final { delivered() }
        }
    }

    /// A message's last byte came.
    private func delivered() {
        guard let whole = message else { return }
        message = nil
        // After our close nothing more is taken: the peer's close is all that is waited for.
        guard phase == .open else { return }
        if whole.dropping {
            emit(.oversized(whole.kind, bytes: whole.bytes))
        } else if whole.kind == .text {
            guard let text = String(validating: whole.data, as: UTF8.self) else { return broken("text that is not UTF-8", code: 1007) }
            emit(.text(text))
        } else {
            emit(.binary(Array(whole.data)))
        }
    }

    private func control(_ opcode: UInt8, _ payload: [UInt8], _ now: UInt64) {
        switch opcode {
        case 0x9:
            if phase == .open { pongDue = payload }
        case 0xA:
            // Only the answer to a `ping()` is news.
            if awaitingPong {
                awaitingPong = false
                emit(.pong)
            }
        case 0x8:
            guard payload.count != 1 else { return broken("a close frame of one byte") }
            let code = payload.count >= 2 ? Int(payload[0]) << 8 | Int(payload[1]) : 1005
            // 1005 only as "no code"; 1004, 1006 and 1015 never go on the wire (RFC 6455, 7.4).
            guard payload.isEmpty || (1000...1003).contains(code) || (1007...1014).contains(code) || (3000...4999).contains(code) else {
                return broken("the close code \(code)")
            }
            guard let text = String(validating: payload.dropFirst(2), as: UTF8.self) else {
                return broken("a close reason that is not UTF-8", code: 1007)
            }
            // The reason goes into the journal: none of the peer's control, format (bidi) or line-breaking characters.
            let reason = String(String.UnicodeScalarView(text.unicodeScalars.filter { ![.control, .format, .lineSeparator, .paragraphSeparator].contains($0.properties.generalCategory) }))
            if phase == .closing {
                finish(.closed(code: 1000, reason: "closed by this side"))
                return
            }
            // Answered with the same code (none for none), then the peer hangs up.
            peerClose = (code, reason)
            queueControl(.close, Array(payload.prefix(2)))
            flush()
            finish(.closed(code: code, reason: reason))
        default:
            broken("a control frame of unknown kind \(opcode)")
        }
    }

    /// The peer broke the protocol: closed with `code` (1002, or 1007 for text that is not UTF-8), and no more is read.
    private func broken(_ what: String, code: Int = 1002) {
        let why = "the server sent \(what)"
        if phase == .open {
            queueControl(.close, [UInt8(code >> 8), UInt8(code & 0xff)])
            flush()
        }
        finish(.closed(code: code, reason: why))
    }

    /// What other threads queued goes after what is already in `out`; our close after all of it.
    private func takeQueued(_ now: UInt64) {
        let (frames, ping, close) = shared.withLock { state in
            defer {
                state.outgoing.removeAll()
                state.wantPing = false
            }
            return (state.outgoing, state.wantPing, state.wantClose)
        }
        out.append(contentsOf: frames)
        if ping {
            queueControl(.ping, [])
            awaitingPong = true
        }
        if close {
            queueControl(.close, [0x03, 0xE8])
            phase = .closing
            closeBy = now + MonotonicClock.nanoseconds(in: Self.closeWithin)
        }
    }

    /// When a silent peer counts as dead: `deadAfter` after its last frame, and never before a ping
    /// has had `deadAfter - pingAfter` to be answered (the audio thread may have been held up
    /// past the time to ping: the peer is not blamed for a ping that never went).
    private var deadAt: UInt64? {
        pingSentAt.map { max(lastProof + MonotonicClock.nanoseconds(in: Self.deadAfter), $0 + MonotonicClock.nanoseconds(in: Self.deadAfter - Self.pingAfter)) }
    }

    /// Pings a quiet peer; drops one silent for `deadAfter` (but not while it is this side that is behind).
    private func keepAlive(_ now: UInt64) {
        if let deadAt, now >= deadAt, !untaken.full {
            finish(.dead(reason: "no pong for \(Self.deadAfter.components.seconds) s"))
        } else if now >= nextPing {
            queueControl(.ping, [])
            nextPing = now + MonotonicClock.nanoseconds(in: Self.pingAfter)
            if pingSentAt == nil { pingSentAt = now }
            pongReadAt = now
        }
    }

    /// Queues a control frame last, or at `index` of `out`.
    private func queueControl(_ opcode: WebSocketFrame.Opcode, _ payload: [UInt8], at index: Int? = nil) {
        let frame = payload.withUnsafeBytes { WebSocketFrame.masked(opcode, $0, key: Self.maskKey()) }
        out.insert(frame, at: index ?? out.count)
        shared.withLock { $0.unwritten += frame.count }
    }

    /// The most events there ever were yielded and not yet taken.
    var untakenPeak: Int { untaken.peak }

    private func emit(_ event: WebSocketEvent) {
        untaken.yielded()
        continuation.yield(event)
    }

    /// The connection never opened: the last event says at which step (`WebSocketError.function`) and why.
    private func fail(_ step: String, _ detail: String) {
        finish(.failed(reason: WebSocketError(function: step, detail: detail).description))
    }

    /// The last event: yields it once, ends the stream, and lets go of the socket.
    private func finish(_ event: WebSocketEvent) {
        guard phase != .finished else { return }
        let clean: Bool
        if case .closed(let code, _) = event, code != 1002, code != 1006 { clean = true } else { clean = false }
        phase = .finished
        connection?.close(clean: clean && opened)
        connection = nil
        if case .success(let plan) = plan, let context = plan.tls {
            ClientConnection.free(context: context)
            self.plan = .failure(WebSocketError(function: "connect", detail: "finished"))
        }
        out = []
        outHead = 0
        outAt = 0
        pongDue = nil
        pongQueued = false
        input = []
        message = nil
        shared.withLock {
            $0.ended = true
            $0.outgoing = []
            $0.unwritten = 0
        }
        emit(event)
        continuation.finish()
    }
}

/// A connection's events; each one taken is counted (UntakenEvents), so the connection reads
/// no further while the consumer is `maxUntaken` behind.
public struct WebSocketEvents: AsyncSequence, Sendable {
    public typealias Element = WebSocketEvent
    fileprivate let stream: AsyncStream<WebSocketEvent>
    fileprivate let taken: @Sendable () -> Void

    public struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate var base: AsyncStream<WebSocketEvent>.Iterator
        fileprivate let taken: @Sendable () -> Void

        public mutating func next() async -> WebSocketEvent? {
            let event = await base.next()
            if event != nil { taken() }
            return event
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> WebSocketEvent? {
            let event = await base.next(isolation: actor)
            if event != nil { taken() }
            return event
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator(), taken: taken) }
}

/// How many of a connection's events are yielded and not yet taken.
private final class UntakenEvents: Sendable {
    /// Yielded and not yet taken, and the most there ever were (what a test checks the bound by).
    private let count = Mutex((now: 0, peak: 0))
    private let limit: Int
    private let engine: AudioEngine

    init(limit: Int, engine: AudioEngine) {
        self.limit = limit
        self.engine = engine
    }

    func yielded() {
        count.withLock {
            $0.now += 1
            $0.peak = max($0.peak, $0.now)
        }
    }

    /// One taken: the audio thread is woken to read again when that brings the count under the limit.
    func taken() {
        if count.withLock({ count in
            count.now -= 1
            return count.now == limit - 1
        }) { engine.wakeUp() }
    }

    var full: Bool { count.withLock { $0.now >= limit } }
    var peak: Int { count.withLock { $0.peak } }
}
