// One WebSocket connection (RFC 6455, the client's side) for the /listen
// stream, driven on the audio thread (AudioEngine) beside the PCMs: a period
// the microphone gave is framed and written into the socket in the wake-up
// that read it, so streaming costs one wake-up a period. Written here rather
// than with libwebsockets, whose Debian build cannot run inside another
// loop's poll, nor with libcurl, whose Debian build has no WebSocket.
// This class is the I/O alone: connect (ClientConnection: TCP, and TLS for
// wss), write what is queued, read what comes; the rules are pure pieces it
// drives: WebSocketUpgrade (the request and the answer's check),
// WebSocketDecoder (the server's frames), WebSocketFrame (ours, masked),
// WebSocketKeepalive (when to ping, when the server is dead).
// Easy to get wrong: nothing here may block the audio thread (the name look-up
// and loading the CA store happen before, on the look-up thread); a redirect is
// an answer, never followed (the token would go with it); a pinned wss key is
// checked before a byte of the request is written; a peer that floods is read
// a bounded amount a wake-up, so the microphone never waits on it, and nothing
// is read while the consumer holds `maxUntakenBytes` untaken; the server
// closes TCP first (RFC 6455, 7.1.1), within `closeWithin` of the closes.
import COpenSSL
import Glibc
import SatelliteCore
import Synchronization

/// A WebSocket client connection.
///
/// Threads: `connect` resolves the name and loads the CA store on `BlockingThread.lookups`,
/// then hands the connection to the audio thread, which does all its I/O and owns every
/// field below "The audio thread's". `sendText`, `sendBinary`, `ping` and `close` may be
/// called from any thread: they queue under `shared`'s lock and wake the audio thread,
/// unless they are called on it (the microphone's sink), which then writes in the same wake-up.
public final class WebSocketClient: AudioEngineSocket, @unchecked Sendable {
    /// What happens on the connection. Ends after the last event. Call `close()` when done with it:
    /// a consumer that only stops iterating leaves the connection up, and unread (`maxUntakenBytes`).
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
    /// How long a close waits, from the first close frame, for the other close and then for the server to end TCP.
    static let closeWithin: Duration = .seconds(2)
    /// The most bytes read in one wake-up: a peer that floods cannot keep the microphone waiting.
    static let maxReadPerWake = 256 << 10
    /// The most bytes of events yielded and not yet taken before reading stops until the consumer
    /// catches up. Past it one more message may come (reading stops after it, never inside it), so a
    /// stalled consumer holds at most this, one message (at most its bound, 8 MiB on /listen) and
    /// one wake-up's reads. A healthy consumer takes each event as it comes; 1 MiB holds a few
    /// hundred of the conversation's text messages, or a second WAV reply behind the first.
    public static let maxUntakenBytes = 1 << 20
    private let continuation: AsyncStream<WebSocketEvent>.Continuation
    private let url: String
    /// The wss server's pinned public key (`sha256/<base64>`), checked once TLS is up.
    private let pinnedKey: String?
    private let engine = AudioEngine.shared
    /// May be taken under ListenSink's route (rank 1), which queues the room's periods here.
    private let shared = OrderedLock(Shared(), rank: 2, name: "the socket's queue")
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
        var upgrade: WebSocketUpgrade
    }

    /// `connecting` takes in TCP and TLS (ClientConnection); `closing` runs from the first close
    /// frame, either side's, until the server ends TCP (or `closeWithin` passes).
    private enum Phase { case waiting, connecting, upgrading, open, closing, finished }

    // The audio thread's (and `prepare`'s, before it hands over).
    private var plan: Result<Plan, WebSocketError>
    private var phase = Phase.waiting
    private var connection: ClientConnection?
    /// Frames to write (the request first), from `out[outHead]`'s byte `outAt` on: a frame a
    /// send() each, as a tracer of the socket counts them (scripts/bench-preload.c).
    private var out: [[UInt8]] = []
    private var outHead = 0
    private var outAt = 0
    /// The answer to the upgrade, until its head is all in.
    private var answer: [UInt8] = []
    private var decoder: WebSocketDecoder
    private var scratch = [UInt8](repeating: 0, count: 65536)
    /// More may be waiting to be read: serviced again at once rather than after a poll.
    private var readMore = false
    /// Taking frames apart stopped because the consumer was behind: go on (and read) as soon
    /// as it catches up, whatever poll says, before the peer's silence is judged.
    private var readsPaused = false
    /// Whether the upgrade was accepted: only then is a TLS close notify sent.
    private var opened = false
    /// `out[outHead]` is a pong not yet wholly written: there is never more than one.
    private var pongQueued = false
    private var openBy: UInt64 = 0
    private var closeBy: UInt64 = 0
    /// What `.closed` will say once the server ends TCP: the peer's close, or ours.
    private var closeReport: (code: Int, reason: String)?
    private var keepalive = WebSocketKeepalive(heardAt: 0, pingAfter: 0, deadAfter: 0)
    /// When the socket was last read for a pong awaited on the periods (or the ping went).
    private var pongReadAt: UInt64 = 0
    /// A `ping()` is unanswered: its pong is an event (a keepalive's, or one nobody asked for, is not).
    private var awaitingPong = false
    /// The peer's ping waiting to be answered: one at most, the latest (RFC 6455, 5.5.3).
    private var pongDue: [UInt8]?

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
        let untaken = UntakenEvents(limit: Self.maxUntakenBytes, engine: AudioEngine.shared)
        self.untaken = untaken
        events = WebSocketEvents(stream: stream, untaken: untaken)
        self.url = url
        decoder = WebSocketDecoder(maxText: maxText, maxBinary: maxMessage)
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
    /// with `.closed` once the server answered and ended TCP (or `closeWithin` passed). Nothing can be queued after it.
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
            let upgrade: WebSocketUpgrade
            do throws(WebSocketUpgrade.BadHeader) {
                upgrade = try WebSocketUpgrade(pathAndQuery: target.pathAndQuery, host: target.hostHeader,
                                               headers: headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
                                               nonce: (0..<16).map { _ in .random(in: .min ... .max) })
            } catch {
                throw WebSocketError(function: "headers", detail: error.reason)
            }
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
                        hostIsAddress: !NameLookup.resolve(target.name, port: target.port, numeric: true).isEmpty,
                        upgrade: upgrade)
        }
        if case .success(let plan) = plan {
            out = [plan.upgrade.request]
            shared.withLock { $0.unwritten += plan.upgrade.request.count }
        }
        engine.attach(socket: self)
    }

    // MARK: The audio thread

    func pollRequest(periodic: Bool) -> pollfd? {
        engine.owner.assertCurrent()
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
            if consumerBehind && !connection.writeWaitsOnRead {
                return events & Int16(POLLOUT) != 0 ? pollfd(fd: connection.fd, events: Int16(POLLOUT), revents: 0) : nil
            }
            return pollfd(fd: connection.fd, events: events, revents: 0)
        case .waiting, .finished: return nil
        }
    }

    func socketDeadline(periodic: Bool) -> UInt64? {
        engine.owner.assertCurrent()
        switch phase {
        case .waiting, .finished: return 0
        case .connecting: return min(openBy, connection?.addressBy ?? .max)
        case .upgrading: return openBy
        case .open:
            // A keepalive ping can go a period late: it goes in a period's wake-up, and only a
            // microphone that stopped waking the thread leaves it to this deadline. So does the read
            // of its pong, which a stalled microphone would otherwise leave to the next ping.
            let ping = periodic ? keepalive.nextPing + Self.periodSlack : keepalive.nextPing
            if untaken.full { return ping }
            let pong = awaitsPongOnPeriods(periodic) ? pongReadAt + Self.periodSlack : UInt64.max
            return readMore ? 0 : min(ping, pong, keepalive.deadAt ?? .max)
        case .closing: return readMore ? 0 : closeBy
        }
    }

    func service(socketEvents: Int16, now: UInt64, periodic: Bool) -> Bool {
        engine.owner.assertCurrent()
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
        if phase == .open && readsPaused && !untaken.full {
            readsPaused = false
            frames(now)
            if phase == .open { receive(now) }
        } else if connectedPhase {
            let pongOnPeriods = awaitsPongOnPeriods(periodic)
            if pongOnPeriods { pongReadAt = now }
            if socketEvents != 0 || readMore || pongOnPeriods { receive(now) }
        }
        if phase == .open { takeQueued(now) }
        if phase == .open { keepAlive(now) }
        if phase == .closing && now >= closeBy { closed() }
        if connectedPhase { flush() }
        return phase != .finished
    }

    /// Whether a keepalive ping is unanswered while periods wake the thread: then the socket is
    /// not polled for reading, and read in each wake-up instead (one read, as the pong is quick).
    private func awaitsPongOnPeriods(_ periodic: Bool) -> Bool {
        periodic && phase == .open && keepalive.awaitingPong && !untaken.full
    }

    /// Nothing is read while the consumer is behind; once closing, nothing more reaches it, and the server's end of TCP is awaited.
    private var consumerBehind: Bool { phase != .closing && untaken.full }

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
            if consumerBehind {
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
                keepalive.heard(at: now)
                if phase == .upgrading {
                    answer.append(contentsOf: scratch[..<count])
                    answered(now)
                } else {
                    decoder.append(scratch[..<count])
                    frames(now)
                }
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
        switch phase {
        case .closing: closed()
        case .open: finish(.closed(code: 1006, reason: "the connection dropped without a close frame"))
        default:
            fail("connect", "the server hung up before it accepted the upgrade" + (why.map { " (\($0))" } ?? ""))
        }
    }

    /// The answer to the upgrade, as far as it has come.
    private func answered(_ now: UInt64) {
        guard case .success(var plan) = plan else { return }
        let verdict = plan.upgrade.read(answer)
        self.plan = .success(plan)
        switch verdict {
        case .incomplete: return
        case .accepted(let headBytes):
            decoder.append(answer[headBytes...])
            answer = []
            keepalive = WebSocketKeepalive(heardAt: now, pingAfter: MonotonicClock.nanoseconds(in: Self.pingAfter),
                                           deadAfter: MonotonicClock.nanoseconds(in: Self.deadAfter))
            phase = .open
            opened = true
            emit(.open)
            frames(now)
        case .redirect(let status, let location):
            finish(.refused(Redirect.refusal(status: status, location: location, base: url, route: "/listen")))
        case .status(let status): fail("handshake", "the server answered with HTTP status \(status)")
        case .invalid(let why): fail("handshake", why)
        }
    }

    /// Acts on the frames the decoder has whole, as far as the consumer keeps up.
    private func frames(_ now: UInt64) {
        while phase == .open || phase == .closing {
            // The consumer is behind: the rest waits in the decoder (one read could hold 32,768 empty frames).
            if consumerBehind {
                readsPaused = true
                return
            }
            guard let frame = decoder.next() else { return }
            // Once closing, only the peer's close is news.
            switch (frame, phase) {
            case (.text(let text), .open): emit(.text(text))
            case (.binary(let data), .open): emit(.binary(data))
            case (.oversized(let kind, let bytes), .open): emit(.oversized(kind, bytes: bytes))
            case (.ping(let payload), .open): pongDue = payload
            case (.pong, .open):
                // Only the answer to a `ping()` is news.
                if awaitingPong {
                    awaitingPong = false
                    emit(.pong)
                }
            case (.close(let code, let reason), _):
                if phase == .open {
                    // Answered with the same code (none for none); then the server ends TCP.
                    closeReport = (code, reason)
                    sendClose(code == 1005 ? [] : [UInt8(code >> 8), UInt8(code & 0xff)], now)
                }
            case (.broken(let code, let what), _):
                if phase == .open { queueControl(.close, [UInt8(code >> 8), UInt8(code & 0xff)]) }
                flush()
                finish(.closed(code: code, reason: "the server sent \(what)"))
            default: break
            }
        }
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
            closeReport = (1000, "closed by this side")
            sendClose([0x03, 0xE8], now)
        }
    }

    /// Queues our close frame, last: nothing goes after it, and the connection waits for the server's
    /// close (if this is the first) and then for the server to end TCP, within `closeWithin`.
    private func sendClose(_ payload: [UInt8], _ now: UInt64) {
        queueControl(.close, payload)
        pongDue = nil
        phase = .closing
        closeBy = now + MonotonicClock.nanoseconds(in: Self.closeWithin)
    }

    /// The close handshake is over (the server ended TCP, or it took too long).
    private func closed() {
        let report = closeReport ?? (1000, "closed by this side")
        finish(.closed(code: report.code, reason: report.reason))
    }

    /// Pings a quiet peer; drops one silent for `deadAfter` (but not while it is this side that is behind).
    private func keepAlive(_ now: UInt64) {
        switch keepalive.step(at: now, consumerBehind: untaken.full) {
        case .wait: return
        case .dead: finish(.dead(reason: "no pong for \(Self.deadAfter.components.seconds) s"))
        case .ping:
            queueControl(.ping, [])
            pongReadAt = now
        }
    }

    /// Queues a control frame last, or at `index` of `out`.
    private func queueControl(_ opcode: WebSocketFrame.Opcode, _ payload: [UInt8], at index: Int? = nil) {
        let frame = payload.withUnsafeBytes { WebSocketFrame.masked(opcode, $0, key: Self.maskKey()) }
        out.insert(frame, at: index ?? out.count)
        shared.withLock { $0.unwritten += frame.count }
    }

    /// The most bytes of events there ever were yielded and not yet taken.
    var untakenPeak: Int { untaken.peak }

    private func emit(_ event: WebSocketEvent) {
        untaken.yielded(event)
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
        if case .closed(let code, _) = event, ![1002, 1006, 1007, 1009].contains(code) { clean = true } else { clean = false }
        phase = .finished
        connection?.close(clean: clean && opened)
        connection = nil
        // The plan goes too: its request holds the token.
        if case .success(let plan) = plan, let context = plan.tls { ClientConnection.free(context: context) }
        plan = .failure(WebSocketError(function: "connect", detail: "finished"))
        out = []
        outHead = 0
        outAt = 0
        pongDue = nil
        pongQueued = false
        answer = []
        decoder = WebSocketDecoder(maxText: 0, maxBinary: 0)
        shared.withLock {
            $0.ended = true
            $0.outgoing = []
            $0.unwritten = 0
        }
        emit(event)
        continuation.finish()
    }
}
