// One HTTP request as a libcurl easy handle: the options that keep the token
// with the pinned server, the answer collected, and the failure sorted into
// the outcomes a caller tells apart. HTTPLoop runs it; every call here, and
// every curl callback, is made on HTTPLoop's thread. libcurl rather than a
// client of our own: these requests are not latency-critical, and its framing
// is the one Debian's security team patches. Easy to get wrong: curl must
// never send the token anywhere but the URL it was given, so curl is handed
// the URL as ServerTarget read it (one reading: no user info, the host
// unescaped once), no redirect is followed, no proxy asked, http and https
// alone, the pinned addresses alone (CURLOPT_RESOLVE, and a socket refused
// for any other), the pinned key checked before a byte is sent; a POST is
// never sent twice (curl sends a request again when a reused connection
// turns out closed, and the server may have acted on it).
import CCurl
import COpenSSL
import Glibc
import SatelliteCore
import Synchronization

/// One request, from its easy handle's options to its result. Everything but `cancelled` is
/// touched only by HTTPLoop's thread (and by curl's callbacks, which run on it).
final class HTTPTransfer: @unchecked Sendable {
    let request: HTTPRequest
    private let target: Result<ServerTarget, ServerTarget.Unusable>
    let limit: Int
    /// Set from whatever thread cancels the task; read when the loop takes the transfer.
    let cancelled = Atomic<Bool>(false)
    /// Which connections this transfer may reuse (HTTPLoop keeps one curl share for each): the
    /// client, scheme, host, port, pinned addresses, pinned key and verification. A connection
    /// made for one such request is one any of them could have made, so it may carry the next.
    let pool: String
    /// The HTTPClient it came from (the first part of `pool`).
    let client: String
    private let bus: EventBus?
    private let done: CheckedContinuation<Result<HTTPResponse, HTTPFailure>, Never>
    private var completed = false

    // HTTPLoop's thread's.
    private(set) var handle: UnsafeMutableRawPointer?
    private let errorText: UnsafeMutablePointer<CChar>
    private var headers: UnsafeMutablePointer<curl_slist>?
    private var resolve: UnsafeMutablePointer<curl_slist>?
    /// The addresses a socket may be opened to (numeric text, as getnameinfo writes them).
    private var allowed: Set<String> = []
    /// The host as the certificate must name it, and whether it is an address.
    private var checkedName: (host: String, isAddress: Bool)?
    private var received: [UInt8] = []
    /// Why the transfer was stopped from a callback, when it was.
    private var stoppedBecause: Stop?
    /// How many times curl was about to send the request (more than once: sent again).
    private var sends = 0
    /// The answer's head as it comes.
    private var head = AnswerHeaders()

    private enum Stop {
        case tooLarge
        case malformed(String)
        case sentAgain
        case refusedAddress(String)
    }

    /// `target` is `request.url` as read once for the look-up, the pool's key and curl's URL.
    /// `client` names the HTTPClient's connections: one client's are never another's.
    init(request: HTTPRequest, target: Result<ServerTarget, ServerTarget.Unusable>, limit: Int, client: String, bus: EventBus?,
         done: CheckedContinuation<Result<HTTPResponse, HTTPFailure>, Never>) {
        self.request = request
        self.target = target
        self.limit = limit
        self.bus = bus
        self.done = done
        self.client = client
        // A URL that cannot be read never connects, and shares nothing: a key of its own.
        pool = (try? target.get()).map { [client, $0.secure ? "https" : "http", $0.name.lowercased(), String($0.port),
                             request.addresses.joined(separator: ","), request.pinnedKey ?? "", String(request.verifyPeer)].joined(separator: "\n") }
            ?? "\(client)\nunusable \(UInt64.random(in: .min ... .max))"
        errorText = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errorText.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        close()
        curl_slist_free_all(headers)
        curl_slist_free_all(resolve)
        errorText.deallocate()
    }

    /// Makes the easy handle and sets its options; `share` holds the connections of `pool`.
    func prepare(share: UnsafeMutableRawPointer) throws(HTTPFailure) -> UnsafeMutableRawPointer {
        let target: ServerTarget
        switch self.target {
        case .success(let read): target = read
        case .failure(let error): throw failure(.other, "url", "the URL cannot be asked: \(error.reason)")
        }
        guard !request.method.isEmpty, request.method.utf8.allSatisfy(HTTPHead.isTokenByte) else {
            throw failure(.other, "request", "the method is not a token")
        }
        // A pin over plain http would vouch for nothing.
        guard request.pinnedKey == nil || target.secure else { throw failure(.other, "url", "a pinned key needs https://") }
        let lines = try headerLines()
        // The host's own address when it is one (no look-up: numeric only), else the pinned ones.
        let literal = NameLookup.resolve(target.name, port: target.port, numeric: true)
        let addresses = request.addresses.isEmpty ? literal : request.addresses.flatMap { NameLookup.resolve($0, port: target.port, numeric: true) }
        guard !addresses.isEmpty else { throw failure(.couldNotResolve, "getaddrinfo", "Could not resolve host: \(target.name)") }
        allowed = Set(addresses.map(\.text))

        guard let handle = curl_easy_init() else { throw failure(.other, "curl_easy_init", "curl could not start a transfer") }
        self.handle = handle
        try configure(handle, share: share, target: target, literal: !literal.isEmpty, lines: lines)
        return handle
    }

    /// Frees the easy handle, on the loop's thread (it uses the pool's share, which has no lock).
    func close() {
        if let handle { curl_easy_cleanup(handle) }
        handle = nil
    }

    /// The request's header lines: the caller's, less those that frame the message (curl's to
    /// say), each refused if it would break the framing, and empty ones that stop curl adding its own.
    private func headerLines() throws(HTTPFailure) -> [String] {
        let framing: Set = ["host", "content-length", "transfer-encoding", "connection", "expect"]
        let given = request.headers.map { (name: $0.name.hasSuffix(":") ? String($0.name.dropLast()) : $0.name, value: $0.value) }
            .filter { !framing.contains($0.name.lowercased()) }
        var lines: [String] = []
        for header in given {
            do throws(HTTPHead.BadHeader) {
                _ = try HTTPHead.lines([header])
                lines.append("\(header.name): \(header.value)")
            } catch {
                throw failure(.other, "headers", error.reason)
            }
        }
        // "Name:" alone removes curl's own: no Expect (curl would wait for "100 Continue" before a
        // body), and no Accept or form Content-Type the caller did not ask for.
        let named = Set(given.map { $0.name.lowercased() })
        for name in ["Expect", "Accept", "Content-Type"] where !named.contains(name.lowercased()) { lines.append(name + ":") }
        return lines
    }

    private func configure(_ handle: UnsafeMutableRawPointer, share: UnsafeMutableRawPointer, target: ServerTarget,
                           literal: Bool, lines: [String]) throws(HTTPFailure) {
        func check(_ code: CURLcode, _ option: String) throws(HTTPFailure) {
            guard code == CURLE_OK else {
                throw failure(.other, "curl_easy_setopt", "\(option): \(String(cString: curl_easy_strerror(code)))")
            }
        }
        // HTTPLoop holds the transfer while curl may call back into it.
        let me = Unmanaged.passUnretained(self).toOpaque()
        // curl's own words on a failure: never a header's value (the token), and no URL with its query.
        try check(curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorText), "CURLOPT_ERRORBUFFER")
        try check(curl_setopt_long(handle, CURLOPT_VERBOSE, 0), "CURLOPT_VERBOSE")
        // The connections (and the CURLOPT_RESOLVE entries) of this pool alone: see `pool`.
        try check(curl_setopt_pointer(handle, CURLOPT_SHARE, share), "CURLOPT_SHARE")
        try check(curl_setopt_string(handle, CURLOPT_URL, Self.curlURL(target)), "CURLOPT_URL")
        // Signals and threads do not mix. (Names are looked up before: every request comes with its addresses.)
        try check(curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1), "CURLOPT_NOSIGNAL")
        try check(curl_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1)), "CURLOPT_HTTP_VERSION")
        // A redirect could carry the Authorization header to another host: a 3xx is an answer.
        try check(curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0), "CURLOPT_FOLLOWLOCATION")
        try check(curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"), "CURLOPT_PROTOCOLS_STR")
        try check(curl_setopt_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"), "CURLOPT_REDIR_PROTOCOLS_STR")
        // curl would otherwise take a proxy from http_proxy and friends, and over plain http that
        // proxy would read the token. The server is on the house network.
        try check(curl_setopt_string(handle, CURLOPT_PROXY, ""), "CURLOPT_PROXY")
        try check(curl_setopt_string(handle, CURLOPT_NOPROXY, "*"), "CURLOPT_NOPROXY")
        if let key = request.pinnedKey {
            // The pinned key proves the server (a self-signed certificate is the usual case): curl
            // checks it once the handshake is done, before anything is sent, and another key ends it.
            try check(curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 0), "CURLOPT_SSL_VERIFYPEER")
            try check(curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 0), "CURLOPT_SSL_VERIFYHOST")
            try check(curl_setopt_string(handle, CURLOPT_PINNEDPUBLICKEY, "sha256//" + key.dropFirst("sha256/".count)),
                      "CURLOPT_PINNEDPUBLICKEY")
        } else if !request.verifyPeer {
            try check(curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 0), "CURLOPT_SSL_VERIFYPEER")
            try check(curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 0), "CURLOPT_SSL_VERIFYHOST")
        } else if target.secure {
            // The chain must be vouched for and name the host; OpenSSL's check of the name, held
            // to no partial wildcard and never the subject's CN, runs with the chain's.
            let bare = target.name.split(separator: "%", maxSplits: 1).first.map(String.init) ?? target.name
            checkedName = (bare, literal)
            // The store the /listen socket trusts: OpenSSL's, which SSL_CERT_FILE may name (curl's own
            // default is the same system store, but ignores the variable).
            if let file = getenv("SSL_CERT_FILE"), access(file, R_OK) == 0 {
                try check(curl_setopt_pointer(handle, CURLOPT_CAINFO, UnsafeMutableRawPointer(file)), "CURLOPT_CAINFO")
            }
            try check(curl_setopt_ssl_ctx(handle) { _, context, user in
                let transfer = Unmanaged<HTTPTransfer>.fromOpaque(user!).takeUnretainedValue()
                guard let context, let name = transfer.checkedName,
                      ccurl_check_names(context, name.host, name.isAddress ? 1 : 0) == 0 else { return CURLE_SSL_CERTPROBLEM }
                return CURLE_OK
            }, "CURLOPT_SSL_CTX_FUNCTION")
            try check(curl_setopt_pointer(handle, CURLOPT_SSL_CTX_DATA, me), "CURLOPT_SSL_CTX_DATA")
        }
        if request.wantsKey {
            // The key is read in the handshake: a connection of its own, left to nobody after.
            try check(curl_setopt_long(handle, CURLOPT_CERTINFO, 1), "CURLOPT_CERTINFO")
            try check(curl_setopt_long(handle, CURLOPT_FRESH_CONNECT, 1), "CURLOPT_FRESH_CONNECT")
            try check(curl_setopt_long(handle, CURLOPT_FORBID_REUSE, 1), "CURLOPT_FORBID_REUSE")
        }
        if !request.addresses.isEmpty {
            let entry = "\(target.name.lowercased()):\(target.port):" + request.addresses.map { $0.contains(":") ? "[\($0)]" : $0 }.joined(separator: ",")
            guard let list = curl_slist_append(nil, entry) else { throw failure(.other, "curl_slist_append", "out of memory") }
            resolve = list
            try check(curl_setopt_slist(handle, CURLOPT_RESOLVE, list), "CURLOPT_RESOLVE")
        }
        // Whatever curl resolved or cached, a socket goes to a pinned address or not at all.
        try check(curl_setopt_opensocket(handle) { user, _, address in
            let transfer = Unmanaged<HTTPTransfer>.fromOpaque(user!).takeUnretainedValue()
            guard let address else { return CURL_SOCKET_BAD }
            // curl_sockaddr's addr is as long as addrlen says, past the sockaddr it is declared as.
            let at = UnsafeRawPointer(address).advanced(by: MemoryLayout<curl_sockaddr>.offset(of: \.addr)!)
            let text = NameLookup.text(of: at.assumingMemoryBound(to: sockaddr.self), length: address.pointee.addrlen)
            guard transfer.allowed.contains(text) else {
                transfer.stoppedBecause = .refusedAddress(text)
                return CURL_SOCKET_BAD
            }
            return socket(address.pointee.family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.`protocol`)
        }, "CURLOPT_OPENSOCKETFUNCTION")
        try check(curl_setopt_pointer(handle, CURLOPT_OPENSOCKETDATA, me), "CURLOPT_OPENSOCKETDATA")
        try check(curl_setopt_prereq(handle) { user, _, _, _, _ in
            let transfer = Unmanaged<HTTPTransfer>.fromOpaque(user!).takeUnretainedValue()
            transfer.sends += 1
            // curl sends a request again on a new connection when a reused one closed before any
            // answer; the server may have read it and acted (/voice must not run twice).
            guard transfer.sends == 1 || HTTPTransfer.safeToRepeat.contains(transfer.request.method) else {
                transfer.stoppedBecause = .sentAgain
                return CURL_PREREQFUNC_ABORT
            }
            transfer.head = AnswerHeaders()
            transfer.received = []
            return CURL_PREREQFUNC_OK
        }, "CURLOPT_PREREQFUNCTION")
        try check(curl_setopt_pointer(handle, CURLOPT_PREREQDATA, me), "CURLOPT_PREREQDATA")

        try check(curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, request.connectTimeout.milliseconds), "CURLOPT_CONNECTTIMEOUT_MS")
        try check(curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, request.totalTimeout.milliseconds), "CURLOPT_TIMEOUT_MS")
        // Refuses an announced oversized body at once; the write callback catches the rest.
        try check(curl_setopt_off_t(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(limit)), "CURLOPT_MAXFILESIZE_LARGE")
        try check(curl_setopt_write(handle, CURLOPT_WRITEFUNCTION) { data, size, count, user in
            let transfer = Unmanaged<HTTPTransfer>.fromOpaque(user!).takeUnretainedValue()
            let bytes = size * count
            guard transfer.received.count + bytes <= transfer.limit else {
                transfer.stoppedBecause = .tooLarge
                return 0  // anything but `bytes` makes curl stop with CURLE_WRITE_ERROR
            }
            if let data { transfer.received.append(contentsOf: UnsafeRawBufferPointer(start: data, count: bytes)) }
            return bytes
        }, "CURLOPT_WRITEFUNCTION")
        try check(curl_setopt_pointer(handle, CURLOPT_WRITEDATA, me), "CURLOPT_WRITEDATA")
        try check(curl_setopt_write(handle, CURLOPT_HEADERFUNCTION) { data, size, count, user in
            let transfer = Unmanaged<HTTPTransfer>.fromOpaque(user!).takeUnretainedValue()
            let bytes = size * count
            guard let data else { return bytes }
            return transfer.header(UnsafeRawBufferPointer(start: data, count: bytes)) ? bytes : 0
        }, "CURLOPT_HEADERFUNCTION")
        try check(curl_setopt_pointer(handle, CURLOPT_HEADERDATA, me), "CURLOPT_HEADERDATA")

        switch request.method {
        case "GET": try check(curl_setopt_long(handle, CURLOPT_HTTPGET, 1), "CURLOPT_HTTPGET")
        case "HEAD": try check(curl_setopt_long(handle, CURLOPT_NOBODY, 1), "CURLOPT_NOBODY")
        case "POST": try check(curl_setopt_long(handle, CURLOPT_POST, 1), "CURLOPT_POST")
        default: try check(curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method), "CURLOPT_CUSTOMREQUEST")
        }
        if request.body != nil || request.method == "POST" || request.method == "PUT" {
            let body = request.body ?? []
            try check(curl_setopt_off_t(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)), "CURLOPT_POSTFIELDSIZE_LARGE")
            // COPYPOSTFIELDS: curl keeps its own copy, so the body's lifetime is not a question.
            let code = body.isEmpty
                ? curl_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, "")
                : body.withUnsafeBytes { curl_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0.baseAddress)) }
            try check(code, "CURLOPT_COPYPOSTFIELDS")
        }
        for line in lines {
            guard let list = curl_slist_append(headers, line) else { throw failure(.other, "curl_slist_append", "out of memory") }
            headers = list
        }
        try check(curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headers), "CURLOPT_HTTPHEADER")
    }

    /// The methods curl may send again on a new connection when a reused one closed under them (RFC 9110, 9.2.2).
    private static let safeToRepeat: Set = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]

    /// The URL as curl is to read it: from ServerTarget's one reading, so curl's host is the one
    /// pinned, resolved and checked, with no user info and no escape left in it.
    private static func curlURL(_ target: ServerTarget) -> String {
        let name = target.name.lowercased()
        let host = name.contains(":") ? "[" + name.split(separator: "%", omittingEmptySubsequences: false).joined(separator: "%25") + "]" : name
        return "\(target.secure ? "https" : "http")://\(host):\(target.port)\(target.pathAndQuery)"
    }

    /// One line of the answer's head (curl calls once per line, the status line first, then the
    /// empty line); false stops the transfer.
    private func header(_ line: UnsafeRawBufferPointer) -> Bool {
        guard head.read(line) else {
            stoppedBecause = .malformed("the server's answer has a Content-Length that is not one number")
            return false
        }
        if head.framedTwoWays, let handle { _ = curl_setopt_long(handle, CURLOPT_FORBID_REUSE, 1) }
        return true
    }

    /// The transfer ended with `code` (CURLMsg's result): its answer or its failure.
    func result(_ code: CURLcode) -> Result<HTTPResponse, HTTPFailure> {
        guard let handle else { return .failure(failure(.other, "curl_easy_init", "no transfer")) }
        if code != CURLE_OK { return .failure(failure(of: code, handle: handle)) }
        var status = 0
        _ = curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        var type: UnsafeMutablePointer<CChar>?
        _ = curl_getinfo_string(handle, CURLINFO_CONTENT_TYPE, &type)
        var response = HTTPResponse(status: status, contentType: type.map { String(cString: $0) }, body: received,
                                    location: (300..<400).contains(status) ? head.location : nil)
        if request.wantsKey { response.serverKey = serverKey(handle) }
        return .success(response)
    }

    /// The SHA-256 of the server certificate's public key, from curl's certificate info (PEM).
    private func serverKey(_ handle: UnsafeMutableRawPointer) -> String? {
        var info: UnsafeMutablePointer<curl_certinfo>?
        guard curl_getinfo_certinfo(handle, &info) == CURLE_OK, let info, info.pointee.num_of_certs > 0,
              var item = info.pointee.certinfo[0], parlour_tls_open() == nil else { return nil }
        while true {
            let line = String(cString: item.pointee.data)
            if line.hasPrefix("Cert:") {
                var digest = [UInt8](repeating: 0, count: 32)
                guard tls_pem_spki_sha256(String(line.dropFirst("Cert:".count)), &digest) == 0 else { return nil }
                return ServerKey.text(digest: digest)
            }
            guard let next = item.pointee.next else { return nil }
            item = next
        }
    }

    /// Sorts curl's code into the few outcomes a caller tells apart, each with the step that failed.
    private func failure(of code: CURLcode, handle: UnsafeMutableRawPointer) -> HTTPFailure {
        let text = String(cString: errorText)
        let curlSays = text.isEmpty ? String(cString: curl_easy_strerror(code)) : text
        switch stoppedBecause {
        case .tooLarge?: return failure(.tooLarge(limit: limit), "answer", "the answer is over \(limit) bytes")
        case .malformed(let why)?: return failure(.malformed, "answer", why)
        case .sentAgain?: return failure(.closedMidAnswer, "read", "the connection closed before the answer was whole")
        case .refusedAddress(let address)?:
            if code == CURLE_COULDNT_CONNECT { return failure(.couldNotConnect, "connect", "\(address) is not a pinned address") }
        case nil: break
        }
        switch code {
        case CURLE_COULDNT_CONNECT: return failure(.couldNotConnect, "connect", curlSays)
        case CURLE_COULDNT_RESOLVE_HOST: return failure(.couldNotResolve, "getaddrinfo", curlSays)
        case CURLE_OPERATION_TIMEDOUT:
            // curl uses one code for both timeouts; a connection never made tells them apart
            // (a reused one counts as connected from the transfer's first microseconds).
            var connected: curl_off_t = 0
            _ = curl_getinfo_off_t(handle, CURLINFO_CONNECT_TIME_T, &connected)
            return connected == 0
                ? failure(.connectTimeout(seconds: request.connectTimeout.seconds), "connect",
                          "no connection within \(ServerAnswers.format(request.connectTimeout.seconds)) s")
                : failure(.timeout(seconds: request.totalTimeout.seconds), "answer",
                          "no whole answer within \(ServerAnswers.format(request.totalTimeout.seconds)) s")
        case CURLE_FILESIZE_EXCEEDED: return failure(.tooLarge(limit: limit), "answer", "the answer announces more than \(limit) bytes")
        case CURLE_WEIRD_SERVER_REPLY, CURLE_UNSUPPORTED_PROTOCOL, CURLE_BAD_CONTENT_ENCODING:
            return failure(.malformed, "answer", curlSays)
        case CURLE_RECV_ERROR where curlSays.range(ofText: "chunked-encoding") != nil:
            // curl's chunk decoder refused the body's framing (its one code for this and a reset).
            return failure(.malformed, "answer", "the server's chunked answer cannot be read: \(curlSays)")
        case CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_SEND_ERROR:
            return failure(.closedMidAnswer, "read", curlSays)
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return failure(.keyChanged(pinned: request.pinnedKey ?? ""), "tls", "the server showed another key than the pinned one")
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE:
            let verdict = verifyResult(handle)
            // A certificate refused for this machine's clock (not yet set at boot) is the clock's fault, not the server's.
            if request.pinnedKey == nil, let verdict,
               case .clockWrong(let now) = CertificateClock.classify(verifyResult: verdict, reason: curlSays, now: .now(), built: Doctor.builtAt()) {
                return failure(.clockWrong(now: now), "tls", ClientConnection.Failure.clockWrong(now: now).description, verifyResult: verdict)
            }
            return failure(.unverified, "tls", curlSays, verifyResult: verdict)
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM:
            return failure(.other, "tls", curlSays, verifyResult: verifyResult(handle))
        default: return failure(.other, "curl_multi_perform", curlSays)
        }
    }

    /// OpenSSL's verdict on the server's certificate (X509_V_OK is 0), for telling a wrong clock
    /// from a wrong server.
    private func verifyResult(_ handle: UnsafeMutableRawPointer) -> Int? {
        var result = 0
        return curl_getinfo_long(handle, CURLINFO_SSL_VERIFYRESULT, &result) == CURLE_OK ? result : nil
    }

    /// Hands the result to the waiting task, once.
    func complete(_ result: Result<HTTPResponse, HTTPFailure>) {
        guard !completed else { return }
        completed = true
        // For scripts/bench: the start of "answer to first frame played" (see Playback), stamped as curl ends.
        if let bus, request.method == "POST", case .success = result {
            bus.notice(.debug, "Answer received.", ["monotonic_ns": String(MonotonicClock.nanoseconds()),
                                                    "url": ServerAnswers.displayURL(request.url)])
        }
        done.resume(returning: result)
    }

    func failure(_ kind: TransferFailure, _ step: String, _ detail: String, verifyResult: Int? = nil) -> HTTPFailure {
        HTTPFailure(kind: kind, function: step, code: 0, detail: detail, method: request.method,
                    url: ServerAnswers.displayURL(request.url), verifyResult: verifyResult)
    }
}

extension Duration {
    fileprivate var milliseconds: Int {
        Int(components.seconds) * 1000 + Int(components.attoseconds / 1_000_000_000_000_000)
    }

    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
