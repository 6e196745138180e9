// One WebSocket connection over libwebsockets, for the /listen stream: lws is
// single-threaded, so one thread of our own owns the lws context and is the
// only one to call lws, but for lws_cancel_service, which wakes it to send what
// other threads queued. Easy to get wrong: lws_write only in WRITEABLE, one
// write per callback; callbacks copy and yield and never block; lws's own log
// would print URLs and headers, so it is silenced before the first context.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import COpenSSL
import CWebSockets
import SatelliteCore
import Synchronization

/// What happens on a connection, in order. `.closed`, `.failed` and `.dead` are the last event.
public enum WebSocketEvent: Sendable, Equatable {
    /// The handshake was accepted.
    case open
    case text(String)
    case binary(Data)
    /// A pong came back, for our ping or lws's keepalive ping.
    case pong
    /// A message over the bound arrived and was dropped as it came, never held whole.
    /// Reported when its last byte has arrived; `bytes` is its whole size.
    case oversized(WebSocketMessageKind, bytes: Int)
    /// The connection closed after it opened. `code` is the peer's close code,
    /// 1000 when we closed it, or 1006 when the connection dropped without a close frame.
    case closed(code: Int?, reason: String)
    /// The connection never opened: no such host, nobody listening, or a handshake the
    /// server refused (the only sign of a bad token on /listen).
    case failed(reason: String)
    /// The connection never opened, and asking the same way again is all that may be done:
    /// the handshake was answered with a redirect (`server_refused`, never followed), or the
    /// wss server showed another key than the pinned one (`server_key_changed`, nothing sent).
    case refused(SatelliteError)
    /// No pong (and so no sign of the peer) for `WebSocketClient.deadAfter`; the connection was dropped.
    case dead(reason: String)
}

public enum WebSocketMessageKind: String, Sendable {
    case text, binary
}

/// A WebSocket client connection.
///
/// Threads: `connect` gives one thread (from SpareThreads, so a reconnect reuses the last one's) the
/// work of creating the lws context, connecting, running `lws_service` until the connection ends,
/// and destroying the context; every lws call but
/// `lws_cancel_service` happens on it, and all the `service*` state below belongs to it.
/// `sendText`, `sendBinary`, `ping` and `close` may be called from any thread: they put
/// work in `shared` (under its lock) and wake the service thread with `lws_cancel_service`,
/// which then asks lws for WRITEABLE and writes there.
public final class WebSocketClient: @unchecked Sendable {
    /// What happens on the connection. Ends after the last event; stopping iteration closes the connection.
    public let events: AsyncStream<WebSocketEvent>

    /// How long a connection may go without a pong before it counts as dead: 10 s (a test may set it smaller, TestBounds).
    public static let deadAfter: Duration = .seconds(TestBounds.deadPeerSeconds(getenv(TestBounds.deadPeerVariable).map { String(cString: $0) }))
    /// How long lws waits after the last pong before it pings.
    static let pingAfterSeconds: UInt16 = 3
    /// The most bytes of binary messages queued but not yet written. About 32 s of 16 kHz
    /// audio: a healthy connection never comes near it, and a dead one is found in 10 s.
    public static let maxQueuedBytes = 1 << 20

    private let continuation: AsyncStream<WebSocketEvent>.Continuation
    private let target: Result<Target, WebSocketError>
    private let url: String
    /// The wss server's pinned public key (`sha256/<base64>`), checked in TLS verification.
    private let pinnedKey: String?
    private let headers: [(name: [UInt8], value: [UInt8])]
    private let maxText: Int
    private let maxBinary: Int
    private let shared = Mutex(Shared())
    /// The context to wake, under a lock of its own: waking is a syscall, and made while
    /// holding `shared` it kept the woken service thread waiting on that lock (a futex
    /// round trip for every message).
    private let waker = Mutex<ContextHandle?>(nil)

    /// Work other threads hand to the service thread.
    private struct Shared {
        var outgoing: [Outgoing] = []
        var queuedBytes = 0
        var wantPing = false
        var wantClose = false
        var ended = false
    }

    /// The lws context as other threads may see it: only to pass to `lws_cancel_service`,
    /// which lws allows from any thread, and only while it is in `waker` (taken out before destroy).
    private struct ContextHandle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private enum Outgoing {
        case text(Data)
        case binary(Data)

        var bytes: Int {
            switch self {
            case .text(let data), .binary(let data): data.count
            }
        }
    }

    // Service thread only.
    private var serviceWSI: OpaquePointer?
    private var serviceOpened = false
    private var serviceFinished = false
    private var servicePeerClose: (code: Int, reason: String)?
    private var serviceClosing = false
    private var serviceLastProof = ContinuousClock.now
    private var serviceMessage: Assembly?
    /// The key a wss server showed when it was not the pinned one.
    private var serviceOtherKey: String?

    /// One incoming message being put together from its fragments.
    private struct Assembly {
        let kind: WebSocketMessageKind
        var bytes = 0
        var data = Data()
        var dropping = false
    }

    /// Opens a connection to a `ws://` or `wss://` URL (wss checks the server's certificate
    /// against the system's CA store). `headers` go on the handshake request, for example
    /// `Authorization: Bearer …`. A binary message over `maxMessage` bytes, or a text message
    /// over `maxText`, is dropped and reported as `.oversized`. Returns at once; the outcome
    /// of connecting is the first event.
    /// With `key` (wss only), the server must show that public key, whoever signed its certificate.
    public static func connect(url: String, headers: [String: String], maxMessage: Int,
                               maxText: Int = 4096, key: String? = nil, addresses: [String] = []) -> WebSocketClient {
        let client = WebSocketClient(url: url, headers: headers, maxMessage: maxMessage, maxText: maxText, key: key,
                                     addresses: addresses)
        SpareThreads.shared.run(name: "websocket") { client.serviceRun() }
        return client
    }

    private init(url: String, headers: [String: String], maxMessage: Int, maxText: Int, key: String?, addresses: [String]) {
        pinnedKey = key
        (events, continuation) = AsyncStream.makeStream(of: WebSocketEvent.self, bufferingPolicy: .unbounded)
        target = Result { () throws(WebSocketError) in try Target(url: url, pinnedAddress: addresses.first) }
        self.url = url
        // lws reads the name up to a NUL (and wants the colon in it); the value goes by length.
        self.headers = headers.sorted { $0.key < $1.key }.map { name, value in
            (Array((name.hasSuffix(":") ? name : name + ":").utf8) + [0], Array(value.utf8))
        }
        self.maxText = maxText
        self.maxBinary = maxMessage
        continuation.onTermination = { [weak self] _ in self?.close() }
    }

    /// Queues a text message. Text is never refused for space: control messages are tiny, and
    /// losing an `end` or `spoke` would put the two sides out of step. False once the connection has ended.
    @discardableResult
    public func sendText(_ text: String) -> Bool {
        enqueue(.text(Data(text.utf8)), bounded: false)
    }

    /// Queues a binary message. When `maxQueuedBytes` are already waiting, the message is
    /// refused and false returned: the peer is not keeping up (or is dead, which the pings will
    /// show), and refusing the newest keeps what was queued, and any control message after it,
    /// in order. The caller decides whether a gap in the audio matters.
    @discardableResult
    public func sendBinary(_ data: Data) -> Bool {
        enqueue(.binary(data), bounded: true)
    }

    /// Sends a ping now; `.pong` follows if the peer is alive. lws also pings by itself.
    public func ping() {
        wake { $0.wantPing = true }
    }

    /// Closes the connection with 1000, after writing what was already queued; the events end
    /// with `.closed`. Nothing can be queued after it.
    public func close() {
        wake { $0.wantClose = true }
    }

    private func enqueue(_ message: Outgoing, bounded: Bool) -> Bool {
        let queued = shared.withLock { state in
            guard !state.ended, !state.wantClose else { return false }
            if bounded && state.queuedBytes + message.bytes > Self.maxQueuedBytes { return false }
            state.outgoing.append(message)
            state.queuedBytes += message.bytes
            return true
        }
        if queued { wakeService() }
        return queued
    }

    private func wake(_ change: (inout Shared) -> Void) {
        let changed = shared.withLock { state in
            guard !state.ended else { return false }
            change(&state)
            return true
        }
        if changed { wakeService() }
    }

    /// Work is queued before the wake; the service thread sets the context before it looks
    /// at the queue. So either the wake finds the context, or the thread finds the work.
    private func wakeService() {
        waker.withLock { context in
            if let context { lws_cancel_service(context.pointer) }
        }
    }

    // MARK: The service thread

    private func serviceRun() {
        Self.silenceLibraryLog
        // The thread may have served an earlier connection (SpareThreads): OpenSSL's error queue is the thread's, and
        // an error left in it would be read as this connection's.
        ERR_clear_error()
        let target: Target
        switch self.target {
        case .success(let value): target = value
        case .failure(let error):
            serviceFinish(.failed(reason: error.description))
            return
        }
        let protocolName = strdup("parlour-listen")!
        let protocols = UnsafeMutablePointer<lws_protocols>.allocate(capacity: 2)
        protocols.initialize(repeating: lws_protocols(), count: 2)
        protocols[0].name = UnsafePointer(protocolName)
        protocols[0].callback = webSocketCallback
        // 64 KiB a callback keeps a megabyte WAV to a few dozen callbacks.
        protocols[0].rx_buffer_size = 65536
        var retry = lws_retry_bo_t()
        retry.secs_since_valid_ping = Self.pingAfterSeconds
        retry.secs_since_valid_hangup = UInt16(Self.deadAfter.components.seconds)
        let strings: [UnsafeMutablePointer<CChar>] = [target.address, target.pathAndQuery, target.hostHeader, "http/1.1"]
            .map { (text: String) in strdup(text)! }
        defer {
            strings.forEach { free($0) }
            free(protocolName)
            protocols.deallocate()
        }

        var info = lws_context_creation_info()
        info.port = CONTEXT_PORT_NO_LISTEN
        info.protocols = UnsafePointer(protocols)
        info.user = Unmanaged.passUnretained(self).toOpaque()
        // TLS only for wss://: setting it up loads the CA store and touches megabytes of
        // libcrypto that a ws:// connection on the home network never uses.
        info.options = target.secure ? UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT) : 0
        // lws sizes its tables by the highest fd it may see; the rlimit can be a million.
        info.fd_limit_per_thread = 1024
        info.timeout_secs = 10
        info.connect_timeout_secs = 10
        guard let context = lws_create_context(&info) else {
            serviceFinish(.failed(reason: WebSocketError(function: "lws_create_context", detail: "it returned NULL").description))
            return
        }
        // A close() that came before there was a context to wake is seen here.
        waker.withLock { $0 = ContextHandle(pointer: context) }
        if shared.withLock({ $0.wantClose }) {
            serviceFinish(.closed(code: nil, reason: "closed by this side before it opened"))
        }

        withUnsafePointer(to: &retry) { retryPointer in
            var connect = lws_client_connect_info()
            connect.context = context
            connect.address = UnsafePointer(strings[0])
            connect.port = Int32(target.port)
            connect.path = UnsafePointer(strings[1])
            connect.host = UnsafePointer(strings[2])
            connect.alpn = UnsafePointer(strings[3])
            connect.ietf_version_or_minus_one = -1
            // lws follows 301-308 by itself, sending the headers (the token) again to the new
            // host: the handshake must take a redirect as an answer, as HTTP does.
            connect.ssl_connection = Int32(bitPattern: LCCSCF_HTTP_NO_FOLLOW_REDIRECT.rawValue)
                | (target.secure ? Int32(bitPattern: LCCSCF_USE_SSL.rawValue) : 0)
                // The pinned key proves the server (see serviceVerify), whatever name its certificate holds.
                | (target.secure && pinnedKey != nil ? Int32(bitPattern: LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK.rawValue) : 0)
            connect.retry_and_idle_policy = retryPointer
            serviceLastProof = .now
            if serviceFinished {
                // Closed before connecting: nothing to connect.
            } else if let wsi = lws_client_connect_via_info(&connect) {
                // A failure may already have been reported from inside the call.
                if !serviceFinished { serviceWSI = wsi }
            } else if !serviceFinished {
                serviceFinish(.failed(reason: WebSocketError(function: "lws_client_connect_via_info",
                                                             detail: "it could not start connecting").description))
            }
            while !serviceFinished {
                lws_service(context, 0)
            }
        }
        waker.withLock { $0 = nil }
        lws_context_destroy(context)
    }

    /// The last event: yields it once, ends the stream and the service loop.
    private func serviceFinish(_ event: WebSocketEvent) {
        guard !serviceFinished else { return }
        serviceFinished = true
        serviceWSI = nil
        shared.withLock {
            $0.ended = true
            $0.outgoing = []
            $0.queuedBytes = 0
        }
        continuation.yield(event)
        continuation.finish()
    }

    fileprivate func serviceCallback(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                                     _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_OPENSSL_PERFORM_SERVER_CERT_VERIFICATION:
            return serviceVerify(store: user)

        case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
            return serviceAppendHeaders(wsi, input, length)

        case LWS_CALLBACK_CLIENT_ESTABLISHED:
            serviceWSI = wsi
            serviceOpened = true
            serviceLastProof = .now
            continuation.yield(.open)
            if shared.withLock({ !$0.outgoing.isEmpty || $0.wantPing || $0.wantClose }) { lws_callback_on_writable(wsi) }

        case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
            if let redirect = serviceRedirect(wsi) {
                serviceFinish(.refused(redirect))
                return 0
            }
            if let shown = serviceOtherKey, let pinned = pinnedKey {
                serviceFinish(.refused(ServerKey.changed(url: ServerAnswers.displayURL(url), shown: shown, pinned: pinned)))
                return 0
            }
            let detail = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "no reason given"
            serviceFinish(.failed(reason: WebSocketError(function: "connect", detail: detail).description))

        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            let (pending, closing) = shared.withLock { (!$0.outgoing.isEmpty || $0.wantPing, $0.wantClose) }
            if let client = serviceWSI, serviceOpened {
                if pending || closing { lws_callback_on_writable(client) }
            } else if closing {
                serviceFinish(.closed(code: nil, reason: "closed by this side before it opened"))
            }

        case LWS_CALLBACK_CLIENT_WRITEABLE:
            return serviceWrite(wsi)

        case LWS_CALLBACK_CLIENT_RECEIVE:
            if let input { serviceReceive(wsi, UnsafeRawBufferPointer(start: input, count: length)) }

        case LWS_CALLBACK_CLIENT_RECEIVE_PONG:
            serviceLastProof = .now
            continuation.yield(.pong)

        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            // The payload is a two-byte code in network order, then a UTF-8 reason.
            var code = 1005, why = ""
            if let input, length >= 2 {
                let bytes = UnsafeRawBufferPointer(start: input, count: length)
                code = Int(bytes[0]) << 8 | Int(bytes[1])
                why = String(decoding: bytes.dropFirst(2), as: UTF8.self)
            }
            servicePeerClose = (code, why)

        case LWS_CALLBACK_CLIENT_CLOSED:
            serviceFinish(serviceClosedEvent())

        case LWS_CALLBACK_WSI_DESTROY:
            if wsi == serviceWSI { serviceFinish(serviceClosedEvent()) }

        default:
            break
        }
        return 0
    }

    /// What a close after open was: ours, the peer's, lws hanging up a silent peer, or a drop.
    private func serviceClosedEvent() -> WebSocketEvent {
        if serviceClosing { return .closed(code: 1000, reason: "closed by this side") }
        if let peer = servicePeerClose { return .closed(code: peer.code, reason: peer.reason) }
        // lws's validity policy hangs up exactly `deadAfter` after the last pong; nothing
        // else drops a connection that has been silent that long.
        if ContinuousClock.now - serviceLastProof >= Self.deadAfter - .milliseconds(500) {
            return .dead(reason: "no pong for \(Self.deadAfter.components.seconds) s")
        }
        return .closed(code: 1006, reason: "the connection dropped without a close frame")
    }

    /// OpenSSL's check of each certificate of the chain (`store` is its X509_STORE_CTX): without a
    /// pinned key its verdict stands; with one, the server's own certificate (depth 0) passes
    /// exactly when it holds that key, and the chain above it does not matter. 0 accepts.
    private func serviceVerify(store: UnsafeMutableRawPointer?) -> Int32 {
        guard let pinnedKey, let store else { return 0 }
        var digest = [UInt8](repeating: 0, count: 32)
        var depth: Int32 = 0
        guard copenssl_store_spki_sha256(store, &digest, &depth) == 0 else { return 1 }
        if depth > 0 {
            copenssl_store_accept(store)
            return 0
        }
        let shown = ServerKey.text(digest: digest)
        guard shown == pinnedKey else {
            serviceOtherKey = shown
            return 1
        }
        copenssl_store_accept(store)
        return 0
    }

    /// A handshake answered with a 3xx: its status and where it pointed, said as a refusal.
    private func serviceRedirect(_ wsi: OpaquePointer) -> SatelliteError? {
        let status = Int(lws_http_client_http_response(wsi))
        guard (300..<400).contains(status) else { return nil }
        var buffer = [CChar](repeating: 0, count: 2048)
        let length = lws_hdr_copy(wsi, &buffer, Int32(buffer.count), WSI_TOKEN_HTTP_LOCATION)
        let location = length > 0 ? String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
        return Redirect.refusal(status: status, location: location, base: url, route: "/listen")
    }

    private func serviceAppendHeaders(_ wsi: OpaquePointer, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        // `input` is an `unsigned char **` cursor into lws's header buffer, with `length` bytes left.
        guard let cursor = input?.assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self),
              let start = cursor.pointee else { return -1 }
        let end = start + length
        for header in headers {
            let failed = header.name.withUnsafeBufferPointer { name in
                header.value.withUnsafeBufferPointer { value in
                    lws_add_http_header_by_name(wsi, name.baseAddress, value.baseAddress, Int32(value.count), cursor, end)
                }
            }
            if failed != 0 { return -1 }
        }
        return 0
    }

    private func serviceWrite(_ wsi: OpaquePointer) -> Int32 {
        enum Work { case close, ping, message(Outgoing), nothing }
        // A close waits for what was queued before it, so a `spoke` then `close()` delivers the `spoke`.
        let (work, more): (Work, Bool) = shared.withLock { state in
            if state.wantPing {
                state.wantPing = false
                return (.ping, !state.outgoing.isEmpty || state.wantClose)
            }
            if !state.outgoing.isEmpty {
                let message = state.outgoing.removeFirst()
                state.queuedBytes -= message.bytes
                return (.message(message), !state.outgoing.isEmpty || state.wantClose)
            }
            return (state.wantClose ? .close : .nothing, false)
        }
        let written: Bool
        switch work {
        case .close:
            serviceClosing = true
            lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, nil, 0)
            return -1
        case .ping: written = Self.write(wsi, Data(), LWS_WRITE_PING)
        case .message(.text(let data)): written = Self.writeFrame(wsi, .text, data)
        case .message(.binary(let data)): written = Self.writeFrame(wsi, .binary, data)
        case .nothing: return 0
        }
        guard written else { return -1 }
        if more { lws_callback_on_writable(wsi) }
        return 0
    }

    /// One lws_write, with the LWS_PRE bytes lws needs in front of the payload.
    private static func write(_ wsi: OpaquePointer, _ data: Data, _ kind: lws_write_protocol) -> Bool {
        let pre = cws_pre()
        var buffer = [UInt8](repeating: 0, count: pre + data.count)
        buffer.replaceSubrange(pre..., with: data)
        let sent = buffer.withUnsafeMutableBufferPointer { lws_write(wsi, $0.baseAddress! + pre, data.count, kind) }
        // lws buffers what the socket did not take; less than asked means the connection failed.
        return sent >= data.count
    }

    /// One message as a whole frame built and masked here (see WebSocketFrame), handed to
    /// lws as raw bytes (LWS_WRITE_RAW, which lws names LWS_WRITE_HTTP): lws writes it as it
    /// is, in order with its own pings and closes, and buffers what the socket did not take.
    private static func writeFrame(_ wsi: OpaquePointer, _ opcode: WebSocketFrame.Opcode, _ data: Data) -> Bool {
        let pre = cws_pre()
        var frame = data.withUnsafeBytes { payload in
            WebSocketFrame.masked(opcode, payload, key: UInt32.random(in: .min ... .max), headroom: pre)
        }
        let length = frame.count - pre
        let sent = frame.withUnsafeMutableBufferPointer { lws_write(wsi, $0.baseAddress! + pre, length, LWS_WRITE_HTTP) }
        return sent >= length
    }

    private func serviceReceive(_ wsi: OpaquePointer, _ chunk: UnsafeRawBufferPointer) {
        var message = serviceMessage ?? Assembly(kind: lws_frame_is_binary(wsi) != 0 ? .binary : .text)
        let limit = message.kind == .text ? maxText : maxBinary
        let rest = lws_remaining_packet_payload(wsi)
        message.bytes += chunk.count
        if !message.dropping && message.bytes + rest > limit {
            message.dropping = true
            message.data = Data()
        }
        if !message.dropping {
            if message.data.isEmpty { message.data.reserveCapacity(message.bytes + rest) }
            message.data.append(contentsOf: chunk)
        }
        guard lws_is_final_fragment(wsi) != 0 else {
            serviceMessage = message
            return
        }
        serviceMessage = nil
        if message.dropping {
            continuation.yield(.oversized(message.kind, bytes: message.bytes))
        } else if message.kind == .text {
            continuation.yield(.text(String(decoding: message.data, as: UTF8.self)))
        } else {
            continuation.yield(.binary(message.data))
        }
    }

    /// lws logs to stderr by default, and its lines can hold the URL and handshake headers
    /// (the token). Errors and warnings only, emitted nowhere: what the caller needs comes
    /// as events. The level is process-wide, so this runs once, before the first context.
    private static let silenceLibraryLog: Void = {
        lws_set_log_level(Int32(LLL_ERR | LLL_WARN)) { _, _ in }
    }()
}

/// lws's callback for every connection: finds the client through the context's user pointer.
private func webSocketCallback(_ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                               _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
    guard let wsi, let context = lws_get_context(wsi), let owner = lws_context_user(context) else { return 0 }
    let client = Unmanaged<WebSocketClient>.fromOpaque(owner).takeUnretainedValue()
    return client.serviceCallback(wsi, reason, user, input, length)
}

/// Where a `ws://` or `wss://` URL points.
private struct Target {
    let secure: Bool
    /// The host to resolve, without IPv6 brackets.
    let address: String
    let port: Int
    /// The Host header: the host as written, with the port when it is not the default.
    let hostHeader: String
    let pathAndQuery: String

    /// `pinnedAddress`: connect there rather than to what the host name resolves to now; the name still goes in Host.
    init(url: String, pinnedAddress: String? = nil) throws(WebSocketError) {
        guard let parts = URLComponents(string: url) else { throw .badURL("it is not a URL") }
        switch parts.scheme?.lowercased() {
        case "ws": secure = false
        case "wss": secure = true
        default: throw .badURL("it is not ws:// or wss://")
        }
        guard let host = parts.host, !host.isEmpty else { throw .badURL("it has no host") }
        let name = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        address = pinnedAddress ?? name
        let defaultPort = secure ? 443 : 80
        port = parts.port ?? defaultPort
        let shownHost = name.contains(":") ? "[\(name)]" : name
        hostHeader = port == defaultPort ? shownHost : "\(shownHost):\(port)"
        let path = parts.percentEncodedPath.isEmpty ? "/" : parts.percentEncodedPath
        pathAndQuery = parts.percentEncodedQuery.map { "\(path)?\($0)" } ?? path
    }
}
