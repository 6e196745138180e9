// One WebSocket connection (RFC 6455, the client's side) for the /listen
// stream, driven on the audio thread (AudioEngine) beside the PCMs: a period
// the microphone gave is framed and written into the socket in the wake-up
// that read it, so streaming costs one wake-up a period. Written here rather
// than with libwebsockets: Debian's lws 4.1.6 is built without
// LWS_WITH_EXTERNAL_POLL, so its loop needed a thread of its own, woken for
// every message: 35 wake-ups a second streaming against 12.5 periods
// (BENCHMARKS.md, "The socket on the audio thread", has the figures since).
// What it does: connect (TCP; TLS through OpenSSL's non-blocking calls for
// wss), the upgrade request and its answer, frames both ways (WebSocketFrame
// builds and masks ours), pings, and the close handshake.
// Easy to get wrong: nothing here may block the audio thread (the name look-up
// and loading the CA store happen before, on the look-up thread); a redirect is
// an answer, never followed (the token would go with it); a pinned wss key is
// checked before a byte of the request is written; a message over its bound is
// dropped as it comes, never held; a peer that floods is read a bounded amount
// a wake-up, so the microphone never waits on it.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import COpenSSL
import Glibc
import SatelliteCore
import Synchronization

/// What happens on a connection, in order. `.closed`, `.failed` and `.dead` are the last event.
public enum WebSocketEvent: Sendable, Equatable {
    /// The handshake was accepted.
    case open
    case text(String)
    case binary(Data)
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
    /// How long one of several addresses may take to connect before the next is tried.
    static let addressWithin: Duration = .seconds(3)

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
        var target: Target
        var addresses: [NameLookup.Address]
        /// wss only: the context, with the CA store loaded (unless a key is pinned).
        var tls: OpaquePointer?
        /// Whether the host is an address (no SNI then).
        var hostIsAddress: Bool
    }

    private enum Phase { case waiting, connecting, securing, upgrading, open, closing, finished }

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
    private var fd: Int32 = -1
    private var ssl: OpaquePointer?
    private var tlsWantsWrite = false
    /// SSL_write waits for the peer's bytes (a renegotiation): POLLIN, not POLLOUT, then.
    private var tlsWriteWantsRead = false
    /// A fatal TLS error came: no SSL_shutdown then.
    private var tlsFatal = false
    /// When the address being connected to is given up for the next.
    private var addressBy: UInt64 = 0
    private var addressAt = 0
    private var lastFailure = "no address to connect to"
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
    public func sendBinary(_ data: Data) -> Bool {
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
        Self.ignoreBrokenPipe
        plan = Result { () throws(WebSocketError) in
            let target = try Target(url: url)
            // A pin over plain ws:// would vouch for nothing, and the token would go in the clear.
            if pinnedKey != nil && !target.secure { throw .badURL("a pinned key needs wss://") }
            var request = "GET \(target.pathAndQuery) HTTP/1.1\r\nHost: \(target.hostHeader)\r\n"
                + "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            var nonce = [UInt8](repeating: 0, count: 16)
            for index in nonce.indices { nonce[index] = .random(in: .min ... .max) }
            let key = Data(nonce).base64EncodedString()
            request += "Sec-WebSocket-Key: \(key)\r\n"
            for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
                let name = name.hasSuffix(":") ? String(name.dropLast()) : name
                // Bytes, not Characters: "\r\n" is one Character, equal to neither "\r" nor "\n".
                // Never the value in the error: it is the token.
                guard !name.isEmpty, name.utf8.allSatisfy(Self.tokenBytes.contains) else {
                    throw WebSocketError(function: "headers", detail: "a header's name is not a token")
                }
                guard !value.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7f }) else {
                    throw WebSocketError(function: "headers", detail: "the \(name) header holds a control character")
                }
                request += "\(name): \(value)\r\n"
            }
            request += "\r\n"
            out = [Array(request.utf8)]
            acceptKey = try Self.accept(key)
            let found = pinned.isEmpty ? NameLookup.resolve(target.name, port: target.port, numeric: false)
                : pinned.flatMap { NameLookup.resolve($0, port: target.port, numeric: true) }
            guard !found.isEmpty else {
                throw WebSocketError(function: "connect", detail: "\(target.name) does not resolve to an address")
            }
            return Plan(target: target, addresses: found, tls: target.secure ? try Self.tlsContext(verifying: pinnedKey == nil) : nil,
                        hostIsAddress: !NameLookup.resolve(target.name, port: target.port, numeric: true).isEmpty)
        }
        shared.withLock { $0.unwritten += out.first?.count ?? 0 }
        engine.attach(socket: self)
    }

    /// A TLS client context: TLS 1.2 or later; with `verifying`, the system's CA store loaded
    /// (`SSL_CERT_FILE` and `SSL_CERT_DIR` honoured, as OpenSSL does) and the chain checked.
    /// Without it a pinned key proves the server instead (`secured`).
    private static func tlsContext(verifying: Bool) throws(WebSocketError) -> OpaquePointer {
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw WebSocketError(function: "tls", detail: "SSL_CTX_new failed: \(tlsError())")
        }
        _ = SSL_CTX_ctrl(context, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_2_VERSION), nil)
        if verifying {
            guard SSL_CTX_set_default_verify_paths(context) == 1 else {
                SSL_CTX_free(context)
                throw WebSocketError(function: "tls", detail: "the system's CA store could not be loaded: \(tlsError())")
            }
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        } else {
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        }
        // A renegotiation could leave a write waiting on reads at any time; the server has no need of one.
        copenssl_refuse_renegotiation(context)
        return context
    }

    /// The bytes a header's name may hold (RFC 9110's token).
    private static let tokenBytes = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)

    /// The Sec-WebSocket-Accept a server must answer `key` with (RFC 6455, 4.2.2).
    private static func accept(_ key: String) throws(WebSocketError) -> String {
        let text = Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)
        var digest = [UInt8](repeating: 0, count: 20)
        guard copenssl_sha1(text, text.count, &digest) == 0 else {
            throw WebSocketError(function: "handshake", detail: "SHA-1 failed: \(tlsError())")
        }
        return Data(digest).base64EncodedString()
    }

    /// A write to a socket the peer has closed is EPIPE, not the end of the process: the daemon
    /// ignores SIGPIPE already (Signals), and a test's process must too, as SSL_write cannot
    /// say MSG_NOSIGNAL. Process-wide, once, as libwebsockets did.
    private static let ignoreBrokenPipe: Void = { signal(SIGPIPE, SIG_IGN) }()

    // MARK: The audio thread

    var pollRequest: pollfd? {
        guard fd >= 0 else { return nil }
        switch phase {
        case .connecting: return pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        case .securing: return pollfd(fd: fd, events: Int16(tlsWantsWrite ? POLLOUT : POLLIN), revents: 0)
        case .upgrading, .open, .closing:
            let writes = (outHead < out.count || pongDue != nil) && !tlsWriteWantsRead || tlsWantsWrite
            // Not read while the consumer is behind (it wakes the thread as it catches up); nor polled
            // at all then unless something is to be written, or a hang-up would be reported at once, again and again.
            if untaken.full && !tlsWriteWantsRead {
                return writes ? pollfd(fd: fd, events: Int16(POLLOUT), revents: 0) : nil
            }
            return pollfd(fd: fd, events: Int16(POLLIN) | (writes ? Int16(POLLOUT) : 0), revents: 0)
        case .waiting, .finished: return nil
        }
    }

    var socketDeadline: UInt64? {
        switch phase {
        case .waiting, .finished: return 0
        case .connecting: return min(openBy, addressBy)
        case .securing, .upgrading: return openBy
        case .open:
            if untaken.full { return nextPing }
            return readMore ? 0 : min(nextPing, deadAt ?? .max)
        case .closing: return readMore && !untaken.full ? 0 : closeBy
        }
    }

    func service(socketEvents: Int16, now: UInt64) -> Bool {
        if phase == .waiting { begin(now) }
        if phase != .finished && phase != .open && phase != .closing {
            if shared.withLock({ $0.wantClose }) {
                finish(.closed(code: nil, reason: "closed by this side before it opened"))
            } else if now >= openBy {
                fail("connect", "no answer within \(Self.openWithin.components.seconds) s")
            }
        }
        if phase == .connecting && socketEvents != 0 {
            connected(now)
        } else if phase == .connecting && now >= addressBy {
            nextAddress(now, after: "no answer within \(Self.addressWithin.components.seconds) s")
        }
        if phase == .securing && socketEvents != 0 { secure() }
        // Read only when poll said so (or a read left more): a period's wake-up costs no recv.
        if (phase == .open || phase == .closing) && readsPaused && !untaken.full {
            readsPaused = false
            frames(now)
            if phase == .open || phase == .closing { receive(now) }
        } else if connectedPhase && (socketEvents != 0 || readMore) {
            receive(now)
        }
        if phase == .open { takeQueued(now) }
        if phase == .open { keepAlive(now) }
        if phase == .closing && now >= closeBy { finish(.closed(code: 1000, reason: "closed by this side")) }
        if connectedPhase { flush() }
        return phase != .finished
    }

    /// TCP (and TLS) up, the connection not finished: there is a socket to read and write.
    private var connectedPhase: Bool { phase == .upgrading || phase == .open || phase == .closing }

    private func begin(_ now: UInt64) {
        openBy = now + MonotonicClock.nanoseconds(in: Self.openWithin)
        switch plan {
        case .failure(let error): finish(.failed(reason: error.description))
        case .success: nextAddress(now)
        }
    }

    /// The address being connected to failed (`why`): on to the next.
    private func nextAddress(_ now: UInt64, after why: String) {
        if case .success(let plan) = plan, addressAt > 0 { lastFailure = "\(plan.addresses[addressAt - 1].text): \(why)" }
        Glibc.close(fd)
        fd = -1
        nextAddress(now)
    }

    /// Starts connecting to the next address; fails when none is left.
    private func nextAddress(_ now: UInt64) {
        guard case .success(let plan) = plan else { return }
        while addressAt < plan.addresses.count {
            let address = plan.addresses[addressAt]
            addressAt += 1
            fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else {
                lastFailure = "socket: \(Self.describe(errno))"
                continue
            }
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            var storage = address.storage
            let result = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) }
            }
            if result == 0 || errno == EINPROGRESS {
                phase = .connecting
                // One silent address (a broken IPv6 route) must not use up the time for all of them.
                addressBy = addressAt < plan.addresses.count ? now + MonotonicClock.nanoseconds(in: Self.addressWithin) : .max
                if result == 0 { connected(now) }
                return
            }
            lastFailure = "\(address.text): \(Self.describe(errno))"
            Glibc.close(fd)
            fd = -1
        }
        fail("connect", lastFailure)
    }

    /// The TCP connection's outcome is known: on to TLS or the upgrade, or the next address.
    private func connected(_ now: UInt64) {
        var error: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size)
        guard error == 0, case .success(let plan) = plan else {
            nextAddress(now, after: Self.describe(error))
            return
        }
        guard let context = plan.tls else {
            phase = .upgrading
            return
        }
        ERR_clear_error()
        guard let made = SSL_new(context) else {
            fail("tls", "SSL_new failed: \(Self.tlsError())")
            return
        }
        ssl = made
        SSL_set_connect_state(made)
        copenssl_allow_partial_writes(made)
        let name = plan.target.name
        // Without a pinned key the certificate must name the host (or hold its address): a
        // check that could not be set up fails the connection rather than go unchecked.
        guard SSL_set_fd(made, fd) == 1, plan.hostIsAddress || copenssl_set_server_name(made, name) == 1,
              pinnedKey != nil || SSL_set1_host(made, name) == 1 else {
            fail("tls", "the connection could not be set up: \(Self.tlsError())")
            return
        }
        phase = .securing
        secure()
    }

    private func secure() {
        guard let ssl else { return }
        ERR_clear_error()
        tlsWantsWrite = false
        let result = SSL_connect(ssl)
        if result == 1 {
            secured()
            return
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return
        case SSL_ERROR_WANT_WRITE: tlsWantsWrite = true
        default:
            tlsFatal = true
            let verdict = SSL_get_verify_result(ssl)
            let detail = verdict != Int(X509_V_OK) ? "the server's certificate is not trusted: " + String(cString: X509_verify_cert_error_string(verdict))
                : Self.tlsError()
            fail("tls", detail)
        }
    }

    /// TLS is up: with a pinned key, the server must show it before a byte of the request goes.
    private func secured() {
        if let pinnedKey, let ssl {
            var digest = [UInt8](repeating: 0, count: 32)
            let shown = copenssl_peer_spki_sha256(ssl, &digest) == 0 ? ServerKey.text(digest: digest) : nil
            guard shown == pinnedKey else {
                finish(.refused(ServerKey.changed(url: ServerAnswers.displayURL(url), shown: shown, pinned: pinnedKey)))
                return
            }
        }
        phase = .upgrading
    }

    /// Reads what the socket has, up to `maxReadPerWake`, and takes it apart.
    private func receive(_ now: UInt64) {
        readMore = false
        var total = 0
        while connectedPhase {
            // The consumer is behind: read on once it catches up (it wakes the thread).
            if untaken.full {
                readsPaused = true
                return
            }
            guard total < Self.maxReadPerWake else {
                readMore = true
                return
            }
            let count = scratch.withUnsafeMutableBytes { read(into: $0) }
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

    private enum IO { case bytes(Int), wait, end(String?) }

    private func read(into buffer: UnsafeMutableRawBufferPointer) -> IO {
        if let ssl {
            ERR_clear_error()
            tlsWantsWrite = false
            let count = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
            return count > 0 ? .bytes(Int(count)) : tlsOutcome(ssl, count, writing: false)
        }
        let count = recv(fd, buffer.baseAddress, buffer.count, 0)
        if count > 0 { return .bytes(count) }
        return count == 0 ? .end(nil) : Self.socketFailure()
    }

    private func write(_ buffer: UnsafeRawBufferPointer) -> IO {
        if let ssl {
            ERR_clear_error()
            tlsWantsWrite = false
            tlsWriteWantsRead = false
            let count = SSL_write(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
            return count > 0 ? .bytes(Int(count)) : tlsOutcome(ssl, count, writing: true)
        }
        let count = send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
        return count >= 0 ? .bytes(count) : Self.socketFailure()
    }

    /// What an SSL_read or SSL_write that returned `result` (0 or less) means.
    private func tlsOutcome(_ ssl: OpaquePointer, _ result: Int32, writing: Bool) -> IO {
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ:
            if writing { tlsWriteWantsRead = true }
            return .wait
        case SSL_ERROR_WANT_WRITE:
            tlsWantsWrite = true
            return .wait
        case SSL_ERROR_ZERO_RETURN: return .end(nil)
        case SSL_ERROR_SYSCALL:
            tlsFatal = true
            return .end(errno != 0 ? Self.describe(errno) : nil)
        default:
            tlsFatal = true
            return .end(Self.tlsError())
        }
    }

    /// What a recv or send that failed means, by errno.
    private static func socketFailure() -> IO {
        errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? .wait : .end(describe(errno))
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
            guard outHead < out.count else { break }
            let result = out[outHead].withUnsafeBytes { write(UnsafeRawBufferPointer(rebasing: $0[outAt...])) }
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
        var found: Int?
        if input.count >= 4 {
            for index in headSearchedTo...(input.count - 4) where input[index] == 13 && input[index + 1] == 10 && input[index + 2] == 13 && input[index + 3] == 10 {
                found = index
                break
            }
            headSearchedTo = input.count - 3
        }
        guard let at = found else {
            if input.count > Self.maxAnswerBytes {
                fail("handshake", "the server's answer has no end within \(Self.maxAnswerBytes) bytes")
            }
            return
        }
        let head = String(decoding: input[..<at], as: UTF8.self)
        input.removeFirst(at + 4)
        let answer = UpgradeAnswer(head)
        switch answer.status {
        case 101:
            guard answer.header("upgrade")?.lowercased() == "websocket",
                  answer.header("connection")?.lowercased().split(separator: ",").contains(where: { UpgradeAnswer.trimmed($0) == "upgrade" }) == true,
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
            emit(.binary(Data(whole.data)))
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
        if let ssl {
            if clean && opened && !tlsFatal { _ = SSL_shutdown(ssl) }
            SSL_free(ssl)
            self.ssl = nil
        }
        if case .success(let plan) = plan, let context = plan.tls {
            SSL_CTX_free(context)
            self.plan = .failure(WebSocketError(function: "connect", detail: "finished"))
        }
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
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

    private static func describe(_ code: Int32) -> String { POSIXFailure("", errno: code).reason }

    /// OpenSSL's last error on this thread, as text; never holds anything of the request.
    private static func tlsError() -> String {
        let code = ERR_get_error()
        guard code != 0 else { return "no reason given" }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return String(cBuffer: text)
    }
}

/// The head of the server's answer to the upgrade: its status and headers.
private struct UpgradeAnswer {
    let status: Int?
    private let headers: [(name: String, value: String)]

    init(_ head: String) {
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.first.map { $0.split(separator: " ", maxSplits: 2) } ?? []
        status = statusLine.count >= 2 && statusLine[0].hasPrefix("HTTP/1.") ? Int(statusLine[1]) : nil
        headers = lines.dropFirst().compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (line[..<colon].lowercased(), Self.trimmed(line[line.index(after: colon)...]))
        }
    }

    /// Without the spaces and tabs around it.
    static func trimmed(_ text: Substring) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    /// The first header of that name (lowercase).
    func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
}

/// Where a `ws://` or `wss://` URL points.
private struct Target {
    let secure: Bool
    /// The host as named, without IPv6 brackets: resolved, sent as SNI and checked in the certificate.
    let name: String
    let port: Int
    /// The Host header: the host as written, with the port when it is not the default.
    let hostHeader: String
    let pathAndQuery: String

    init(url: String) throws(WebSocketError) {
        guard let parts = URLComponents(string: url) else { throw .badURL("it is not a URL") }
        switch parts.scheme?.lowercased() {
        case "ws": secure = false
        case "wss": secure = true
        default: throw .badURL("it is not ws:// or wss://")
        }
        guard let host = parts.host, !host.isEmpty else { throw .badURL("it has no host") }
        name = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let defaultPort = secure ? 443 : 80
        port = parts.port ?? defaultPort
        let shownHost = name.contains(":") ? "[\(name)]" : name
        hostHeader = port == defaultPort ? shownHost : "\(shownHost):\(port)"
        let path = parts.percentEncodedPath.isEmpty ? "/" : parts.percentEncodedPath
        pathAndQuery = parts.percentEncodedQuery.map { "\(path)?\($0)" } ?? path
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
