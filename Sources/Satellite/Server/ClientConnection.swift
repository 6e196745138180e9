// One connection to the server, as the /listen socket (WebSocketClient) and
// HTTP (HTTPExchange) both make it: a non-blocking TCP connect trying each
// address in turn, TLS through OpenSSL's non-blocking calls for an https or
// wss server, and reads and writes that say when to wait. Its owner drives it
// from its own poll (the audio thread, or HTTPLoop's). Easy to get wrong: a
// pinned key is checked once TLS is up, before the owner writes a byte;
// without a pin the certificate must be vouched for by the CA store and name
// the host in its subjectAltName (tls_SSL_check_host); nothing here blocks (the names were looked up, and the CA store
// loaded, before).
import COpenSSL
import Glibc
import SatelliteCore

final class ClientConnection {
    /// How TLS is to be spoken, or nil for plain TCP.
    struct Security {
        /// The context, with the CA store loaded when the chain is checked. Not freed here.
        var context: OpaquePointer
        /// The host as named: sent as SNI (unless an address) and checked in the certificate.
        var serverName: String
        var hostIsAddress: Bool
        /// The public key the server must show (`sha256/<base64>`); the chain is not checked then.
        var pinnedKey: String?
        /// Whether the certificate must name the host (false when the context checks nothing).
        var checkHost: Bool
    }

    /// Why a connection was not made.
    enum Failure: Error {
        /// No address took the connection (the last one's reason).
        case connect(String)
        /// TLS could not be set up or its handshake failed.
        case tls(String)
        /// The certificate is vouched for by no authority this machine trusts, or names another host.
        case unverified(String)
        /// The server showed another key than the pinned one (`shown`, nil if none could be read).
        case keyChanged(shown: String?)
        /// The certificate could not be checked by this machine's clock, which says `now` (CertificateClock).
        case clockWrong(now: WallTime)
    }

    enum Progress { case working, ready, failed(Failure) }

    /// A read or write's outcome; `end`'s reason is nil for a clean end (TCP's FIN, TLS's close notify).
    enum IO { case bytes(Int), wait, end(String?) }

    /// How long one of several addresses may take to connect before the next is tried.
    static let addressWithin: Duration = .seconds(3)

    private let addresses: [NameLookup.Address]
    private let security: Security?
    private(set) var fd: Int32 = -1
    private var ssl: OpaquePointer?
    private var securing = false
    private var tlsWantsWrite = false
    /// SSL_write waits for the peer's bytes: POLLIN, not POLLOUT, then.
    private var tlsWriteWantsRead = false
    /// A fatal TLS error came: no SSL_shutdown then.
    private var tlsFatal = false
    private var addressAt = 0
    /// When the address being connected to is given up for the next.
    private(set) var addressBy: UInt64 = .max
    private var lastFailure = "no address to connect to"
    private(set) var isReady = false
    /// The key the server showed in the TLS handshake, once it is up.
    private(set) var shownKey: String?

    init(addresses: [NameLookup.Address], security: Security?) {
        Self.ignoreBrokenPipe
        self.addresses = addresses
        self.security = security
    }

    deinit { close(clean: false) }

    /// Starts connecting to the first address.
    func start(_ now: UInt64) -> Progress { nextAddress(now) }

    /// The events to poll for while connecting, or once ready with `writing` wanted.
    func events(writing: Bool) -> Int16 {
        if !isReady { return Int16(securing ? (tlsWantsWrite ? POLLOUT : POLLIN) : POLLOUT) }
        let writes = writing && !tlsWriteWantsRead || tlsWantsWrite
        return Int16(POLLIN) | (writes ? Int16(POLLOUT) : 0)
    }

    /// An SSL_write is waiting on the peer's bytes: only reading lets it go on.
    var writeWaitsOnRead: Bool { tlsWriteWantsRead }

    /// Goes on connecting after poll said `events` (0 when it said nothing: only the address's time is checked).
    func advance(events: Int16, now: UInt64) -> Progress {
        if isReady { return .ready }
        if securing { return events != 0 ? secure() : .working }
        if events != 0 { return connected(now) }
        if now >= addressBy { return nextAddress(now, after: "no answer within \(Self.addressWithin.components.seconds) s") }
        return .working
    }

    /// The address being connected to failed (`why`): on to the next.
    private func nextAddress(_ now: UInt64, after why: String) -> Progress {
        if addressAt > 0 { lastFailure = "\(addresses[addressAt - 1].text): \(why)" }
        Glibc.close(fd)
        fd = -1
        return nextAddress(now)
    }

    /// Starts connecting to the next address; fails when none is left.
    private func nextAddress(_ now: UInt64) -> Progress {
        while addressAt < addresses.count {
            let address = addresses[addressAt]
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
                // One silent address (a broken IPv6 route) must not use up the time for all of them.
                addressBy = addressAt < addresses.count ? now + MonotonicClock.nanoseconds(in: Self.addressWithin) : .max
                return result == 0 ? connected(now) : .working
            }
            lastFailure = "\(address.text): \(Self.describe(errno))"
            Glibc.close(fd)
            fd = -1
        }
        return .failed(.connect(lastFailure))
    }

    /// The TCP connection's outcome is known: on to TLS, or the next address.
    private func connected(_ now: UInt64) -> Progress {
        var error: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size)
        guard error == 0 else { return nextAddress(now, after: Self.describe(error)) }
        addressBy = .max
        guard let security else {
            isReady = true
            return .ready
        }
        tls_ERR_clear_error()
        guard let made = tls_SSL_new(security.context) else { return .failed(.tls("SSL_new failed: \(Self.tlsError())")) }
        ssl = made
        tls_SSL_set_connect_state(made)
        tls_SSL_allow_partial_writes(made)
        // A check that could not be set up fails the connection rather than go unchecked.
        guard tls_SSL_set_fd(made, fd) == 1,
              security.hostIsAddress || tls_SSL_set_server_name(made, security.serverName) == 1,
              !security.checkHost || tls_SSL_check_host(made, security.serverName) == 1 else {
            return .failed(.tls("the connection could not be set up: \(Self.tlsError())"))
        }
        securing = true
        return secure()
    }

    private func secure() -> Progress {
        guard let ssl, let security else { return .failed(.tls("no TLS connection")) }
        tls_ERR_clear_error()
        tlsWantsWrite = false
        let result = tls_SSL_connect(ssl)
        guard result == 1 else {
            switch tls_SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ: return .working
            case SSL_ERROR_WANT_WRITE:
                tlsWantsWrite = true
                return .working
            default:
                tlsFatal = true
                // The chain is checked (and its result worth reading) only without a pinned key.
                guard security.checkHost else { return .failed(.tls(Self.tlsError())) }
                let verdict = tls_SSL_get_verify_result(ssl)
                switch CertificateClock.classify(verifyResult: verdict, reason: String(cString: tls_X509_verify_cert_error_string(verdict)),
                                                 now: .now(), built: Doctor.builtAt()) {
                case .trusted: return .failed(.tls(Self.tlsError()))
                case .clockWrong(let now): return .failed(.clockWrong(now: now))
                case .untrusted(let reason): return .failed(.unverified("the server's certificate is not trusted: " + reason))
                }
            }
        }
        securing = false
        var digest = [UInt8](repeating: 0, count: 32)
        shownKey = tls_peer_spki_sha256(ssl, &digest) == 0 ? ServerKey.text(digest: digest) : nil
        // The pinned key proves the server: another one and the owner sends nothing.
        if let pinned = security.pinnedKey, shownKey != pinned { return .failed(.keyChanged(shown: shownKey)) }
        isReady = true
        return .ready
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> IO {
        if let ssl {
            tls_ERR_clear_error()
            tlsWantsWrite = false
            let count = tls_SSL_read(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
            return count > 0 ? .bytes(Int(count)) : tlsOutcome(ssl, count, writing: false)
        }
        let count = recv(fd, buffer.baseAddress, buffer.count, 0)
        if count > 0 { return .bytes(count) }
        return count == 0 ? .end(nil) : Self.socketFailure()
    }

    func write(_ buffer: UnsafeRawBufferPointer) -> IO {
        if let ssl {
            tls_ERR_clear_error()
            tlsWantsWrite = false
            tlsWriteWantsRead = false
            let count = tls_SSL_write(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
            return count > 0 ? .bytes(Int(count)) : tlsOutcome(ssl, count, writing: true)
        }
        let count = send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
        return count >= 0 ? .bytes(count) : Self.socketFailure()
    }

    /// Whether an idle connection is still fit to carry a request: the peer has neither closed it
    /// nor sent anything (an idle HTTP server says nothing until asked; a TLS alert is a goodbye).
    var isIdleAndOpen: Bool {
        guard isReady, fd >= 0, ssl.map({ tls_SSL_pending($0) == 0 }) ?? true else { return false }
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }

    /// Lets go of the socket; with `clean`, a TLS close notify is sent first (never after an error).
    func close(clean: Bool) {
        if let ssl {
            if clean && isReady && !tlsFatal { _ = tls_SSL_shutdown(ssl) }
            tls_SSL_free(ssl)
            self.ssl = nil
        }
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
        isReady = false
    }

    /// What an SSL_read or SSL_write that returned `result` (0 or less) means.
    private func tlsOutcome(_ ssl: OpaquePointer, _ result: Int32, writing: Bool) -> IO {
        switch tls_SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ:
            if writing { tlsWriteWantsRead = true }
            return .wait
        case SSL_ERROR_WANT_WRITE:
            tlsWantsWrite = true
            return .wait
        case SSL_ERROR_ZERO_RETURN: return .end(nil)
        case SSL_ERROR_SYSCALL:
            // With errno 0 the peer hung up without TLS's close notify: what follows may have been cut off.
            tlsFatal = true
            return .end(errno != 0 ? Self.describe(errno) : "the connection was cut without TLS's close notify")
        default:
            tlsFatal = true
            return .end(Self.tlsError())
        }
    }

    /// What a recv or send that failed means, by errno.
    private static func socketFailure() -> IO {
        errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? .wait : .end(describe(errno))
    }

    /// A TLS client context: TLS 1.2 or later; with `verifying`, the system's CA store loaded
    /// (`SSL_CERT_FILE` and `SSL_CERT_DIR` honoured, as OpenSSL does) and the chain checked.
    /// Loading the store takes tens of milliseconds: never on the audio thread.
    static func tlsContext(verifying: Bool) throws(ClientConnection.Failure) -> OpaquePointer {
        if let why = parlour_tls_open() { throw .tls("OpenSSL could not be opened: \(String(cString: why))") }
        tls_ERR_clear_error()
        guard let context = tls_SSL_CTX_new_client() else { throw .tls("SSL_CTX_new failed: \(tlsError())") }
        guard tls_SSL_CTX_set_min_tls12(context) == 1 else {
            tls_SSL_CTX_free(context)
            throw .tls("TLS 1.2 could not be made the least version: \(tlsError())")
        }
        if verifying {
            guard tls_SSL_CTX_set_default_verify_paths(context) == 1 else {
                tls_SSL_CTX_free(context)
                throw .tls("the system's CA store could not be loaded: \(tlsError())")
            }
            tls_SSL_CTX_set_verify(context, SSL_VERIFY_PEER)
        } else {
            tls_SSL_CTX_set_verify(context, SSL_VERIFY_NONE)
        }
        tls_SSL_CTX_refuse_renegotiation(context)
        return context
    }

    /// Lets go of a context `tlsContext` made.
    static func free(context: OpaquePointer) { tls_SSL_CTX_free(context) }

    /// A write to a socket the peer has closed is EPIPE, not the end of the process: the daemon
    /// ignores SIGPIPE already (Signals), and a test's process must too, as SSL_write cannot
    /// say MSG_NOSIGNAL. Process-wide, once.
    private static let ignoreBrokenPipe: Void = { signal(SIGPIPE, SIG_IGN) }()

    static func describe(_ code: Int32) -> String { POSIXFailure("", errno: code).reason }

    /// OpenSSL's last error on this thread, as text; never holds anything of the request.
    static func tlsError() -> String {
        guard parlour_tls_open() == nil else { return "OpenSSL is not open" }
        let code = tls_ERR_get_error()
        guard code != 0 else { return "no reason given" }
        var text = [CChar](repeating: 0, count: 256)
        tls_ERR_error_string_n(code, &text, text.count)
        return String(cBuffer: text)
    }
}

extension ClientConnection.Failure: CustomStringConvertible {
    var description: String {
        switch self {
        case .connect(let why), .tls(let why), .unverified(let why): return why
        case .keyChanged: return "the server showed another key than the pinned one"
        case .clockWrong(let now): return "the certificate cannot be checked by this clock, which says \(now.iso8601)"
        }
    }
}
