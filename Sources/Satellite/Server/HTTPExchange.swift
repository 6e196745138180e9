// One HTTP/1.1 request and its answer, driven by HTTPLoop's thread over a
// ClientConnection: the request written, the answer's head read, and its body
// by length, by chunks or to the close, within the client's limit. Written
// here rather than with libcurl: curl and the twenty libraries it brings held
// 4.25 MiB of the streaming daemon's memory, and its curl_global_init kept
// about 1.7 MiB more of OpenSSL resident even for a plain http server
// (BENCHMARKS.md, "HTTP of our own", has the figures since); the connection
// and TLS are the /listen socket's already. Easy to get wrong: the token
// goes to the URL it was given and nowhere else: no redirect is followed, no
// proxy asked, the pinned addresses and key alone; a connection is reused
// only for the same client, host, addresses and key (`pool`), and only when
// its last answer ended cleanly where its framing said.
import Glibc
import SatelliteCore
import Synchronization

/// One request, from its first byte to its result. Everything but `cancelled` is touched only
/// by HTTPLoop's thread.
final class HTTPExchange: @unchecked Sendable {
    let request: HTTPRequest
    private let target: Result<ServerTarget, ServerTarget.Unusable>
    let limit: Int
    /// Set from whatever thread cancels the task; read when the loop takes the exchange.
    let cancelled = Atomic<Bool>(false)
    /// Which connections this exchange may reuse: the client, scheme, host, port, pinned
    /// addresses, pinned key and verification. A connection made for one such request is one
    /// any of them could have made, so it may carry the next.
    let pool: String
    /// The HTTPClient it came from (the first part of `pool`).
    let client: String
    private let bus: EventBus?
    private let done: CheckedContinuation<Result<HTTPResponse, HTTPFailure>, Never>
    private var completed = false

    /// The most bytes an answer's head (or a chunked body's trailers) may have.
    static let maxHeadBytes = 65536
    /// The most bytes read in one wake-up, so one fast answer cannot hold up the others.
    static let maxReadPerWake = 256 << 10

    private enum Phase { case waiting, connecting, exchanging, finished }

    /// How the body's end is known.
    private enum Framing { case none, length(Int), chunked, untilClose }

    /// Where a chunked body's reading is.
    private enum ChunkStep { case size, data(Int), dataEnd, trailers }

    // HTTPLoop's thread's.
    private var phase = Phase.waiting
    private(set) var connection: ClientConnection?
    /// The connection came from the pool: a close before any answer is its age, not the server's
    /// verdict, and the request goes once more on a new one.
    private var reused = false
    private var addresses: [NameLookup.Address] = []
    private var security: ClientConnection.Security?
    private var out: [UInt8] = []
    private var outAt = 0
    /// Bytes read; those before `consumed` are taken apart already (dropped once a parse is done,
    /// so many small chunks cost no copying of what follows each).
    private var input: [UInt8] = []
    private var consumed = 0
    /// Where the search for the next line's end goes on from.
    private var lineSearchedTo = 0
    /// The head says the connection cannot carry another request after this answer.
    private var lastOnConnection = false
    private var scratch = [UInt8](repeating: 0, count: 65536)
    private var headSearchedTo = 0
    private var head: AnswerHead?
    private var framing = Framing.none
    private var chunk = ChunkStep.size
    private var trailerBytes = 0
    private var body = [UInt8]()
    private var connectBy: UInt64 = 0
    private var totalBy: UInt64 = 0
    private var readMore = false
    /// The answer ended where its framing said, on an HTTP/1.1 connection the server keeps open.
    private(set) var reusable = false

    /// `target` is `request.url` as read once for the look-up, the pool's key and the connection.
    /// `client` names the HTTPClient's connections: one client's are never another's.
    init(request: HTTPRequest, target: Result<ServerTarget, ServerTarget.Unusable>, limit: Int, client: String, bus: EventBus?,
         done: CheckedContinuation<Result<HTTPResponse, HTTPFailure>, Never>) {
        self.request = request
        self.target = target
        self.limit = limit
        self.bus = bus
        self.done = done
        self.client = client
        // From the connection's own reading of the URL: a URL read two ways could share a key with
        // a connection to another server. One that cannot be read never connects, and shares
        // nothing: a key of its own.
        pool = (try? target.get()).map { [client, $0.secure ? "https" : "http", $0.name.lowercased(), String($0.port),
                             request.addresses.joined(separator: ","), request.pinnedKey ?? "", String(request.verifyPeer)].joined(separator: "\n") }
            ?? "\(client)\nunusable \(UInt64.random(in: .min ... .max))"
    }

    var isFinished: Bool { phase == .finished }

    /// Whether a connection from the pool may carry it: a key wanted from the handshake needs a handshake.
    var mayReuse: Bool { !request.wantsKey }

    // MARK: HTTPLoop's thread

    /// Starts the exchange on `idle` (a pooled connection of `pool`) or a new connection.
    /// `context` gives the TLS context for verifying or not; nil when it could not be made.
    func start(_ now: UInt64, idle: ClientConnection?, context: (Bool) throws(ClientConnection.Failure) -> OpaquePointer) {
        totalBy = now + MonotonicClock.nanoseconds(in: request.totalTimeout)
        let target: ServerTarget
        switch self.target {
        case .success(let read): target = read
        case .failure(let error): return fail(.other, "url", "the URL cannot be asked: \(error.reason)")
        }
        guard request.method.utf8.allSatisfy(HTTPHead.isTokenByte), !request.method.isEmpty else {
            return fail(.other, "request", "the method is not a token")
        }
        // curl's rule kept: a pin over plain http would vouch for nothing.
        guard !(request.pinnedKey != nil && !target.secure) else { return fail(.other, "url", "a pinned key needs https://") }
        var text = "\(request.method) \(target.pathAndQuery) HTTP/1.1\r\nHost: \(target.hostHeader)\r\n"
        do throws(HTTPHead.BadHeader) {
            // The framing is this client's to say: a caller's would contradict it.
            let framingNames: Set = ["host", "content-length", "transfer-encoding", "connection", "expect"]
            text += try HTTPHead.lines(request.headers.filter { !framingNames.contains($0.name.lowercased()) })
        } catch {
            return fail(.other, "headers", error.reason)
        }
        if let body = request.body {
            text += "Content-Length: \(body.count)\r\n"
        } else if request.method == "POST" || request.method == "PUT" {
            text += "Content-Length: 0\r\n"
        }
        out = Array((text + "\r\n").utf8)
        if let body = request.body { out.append(contentsOf: body) }

        // The host when it is an address itself (no look-up: numeric only).
        let literal = NameLookup.resolve(target.name, port: target.port, numeric: true)
        addresses = request.addresses.isEmpty ? literal : request.addresses.flatMap { NameLookup.resolve($0, port: target.port, numeric: true) }
        guard !addresses.isEmpty else {
            return fail(.couldNotResolve, "getaddrinfo", "Could not resolve host: \(target.name)")
        }
        if target.secure {
            // A pinned key proves the server (a self-signed certificate is the usual case); without one
            // the chain is checked and must name the host, unless the caller asked to see any key.
            let checks = request.pinnedKey == nil && request.verifyPeer
            do throws(ClientConnection.Failure) {
                security = ClientConnection.Security(
                    context: try context(checks), serverName: target.name,
                    hostIsAddress: !literal.isEmpty,
                    pinnedKey: request.pinnedKey, checkHost: checks)
            } catch {
                return fail(.other, "tls", error.description)
            }
        }
        if let idle {
            connection = idle
            reused = true
            phase = .exchanging
        } else {
            connect(now)
        }
    }

    private func connect(_ now: UInt64) {
        // A request sent again on a new connection has its own time to connect, within the total.
        connectBy = min(now + MonotonicClock.nanoseconds(in: request.connectTimeout), totalBy)
        let connection = ClientConnection(addresses: addresses, security: security)
        self.connection = connection
        reused = false
        phase = .connecting
        progress(connection.start(now), now)
    }

    /// The descriptor and events to poll for, or nil when it has finished.
    var pollRequest: pollfd? {
        guard let connection, connection.fd >= 0 else { return nil }
        switch phase {
        case .connecting: return pollfd(fd: connection.fd, events: connection.events(writing: false), revents: 0)
        case .exchanging: return pollfd(fd: connection.fd, events: connection.events(writing: outAt < out.count), revents: 0)
        case .waiting, .finished: return nil
        }
    }

    /// When it wants servicing even if its descriptor says nothing (CLOCK_MONOTONIC ns).
    var deadline: UInt64 {
        switch phase {
        case .connecting: return min(connectBy, totalBy, connection?.addressBy ?? .max)
        case .exchanging: return readMore ? 0 : totalBy
        case .waiting, .finished: return 0
        }
    }

    /// After each poll, with what it said of the descriptor (0 when nothing); false once finished.
    func service(events: Int16, now: UInt64) -> Bool {
        if phase == .connecting {
            if now >= min(connectBy, totalBy) {
                fail(.connectTimeout(seconds: request.connectTimeout.seconds), "connect",
                     "no connection within \(ServerAnswers.format(request.connectTimeout.seconds)) s")
            } else if let connection {
                progress(connection.advance(events: events, now: now), now)
            }
        }
        if phase == .exchanging {
            if events != 0 || readMore { receive(now) }
            if phase == .exchanging && outAt < out.count { send(now) }
            if phase == .exchanging && now >= totalBy {
                fail(.timeout(seconds: request.totalTimeout.seconds), "answer",
                     "no whole answer within \(ServerAnswers.format(request.totalTimeout.seconds)) s")
            }
        }
        return phase != .finished
    }

    /// Ends it as cancelled, whatever it was doing.
    func cancel() {
        fail(.cancelled, "cancel", "cancelled")
    }

    /// Where connecting got to.
    private func progress(_ progress: ClientConnection.Progress, _ now: UInt64) {
        switch progress {
        case .working: return
        case .ready:
            phase = .exchanging
            send(now)
        case .failed(.connect(let why)): fail(.couldNotConnect, "connect", why)
        case .failed(.unverified(let why)): fail(.unverified, "tls", why)
        case .failed(.clockWrong(let now)): fail(.clockWrong(now: now), "tls", ClientConnection.Failure.clockWrong(now: now).description)
        case .failed(.keyChanged): fail(.keyChanged(pinned: request.pinnedKey ?? ""), "tls", "the server showed another key than the pinned one")
        case .failed(.tls(let why)): fail(.other, "tls", why)
        }
    }

    private func send(_ now: UInt64) {
        guard let connection else { return }
        while outAt < out.count {
            switch out.withUnsafeBytes({ connection.write(UnsafeRawBufferPointer(rebasing: $0[outAt...])) }) {
            case .bytes(let count): outAt += count
            case .wait: return
            case .end(let why):
                // The server may have answered already (and closed without reading the rest): read what it said.
                receive(now)
                if phase == .exchanging && self.connection === connection { ended(why, now) }
                return
            }
        }
    }

    private func receive(_ now: UInt64) {
        readMore = false
        var total = 0
        while phase == .exchanging, let connection {
            guard total < Self.maxReadPerWake else {
                readMore = true
                return
            }
            switch scratch.withUnsafeMutableBytes({ connection.read(into: $0) }) {
            case .bytes(let count):
                total += count
                input.append(contentsOf: scratch[..<count])
                parse()
            case .wait: return
            case .end(let why): ended(why, now)
            }
        }
    }

    /// The connection ended: the end of a body read to the close, or an answer cut short.
    /// `why` is nil for a clean end: TCP's FIN, or TLS's close notify (a cut without it may be an attacker's).
    private func ended(_ why: String?, _ now: UInt64) {
        if head != nil, case .untilClose = framing, why == nil {
            return finish(reuse: false)
        }
        // A pooled connection the server had closed meanwhile: once more, on a new one. Not a POST:
        // the server may have read it and acted before it closed, and /voice must not run twice.
        if reused && head == nil && input.isEmpty && Self.safeToRepeat.contains(request.method) {
            connection?.close(clean: false)
            outAt = 0
            return connect(now)
        }
        fail(.closedMidAnswer, "read", "the connection closed before the answer was whole" + (why.map { " (\($0))" } ?? ""))
    }

    /// The methods sent again on a new connection when a pooled one turns out closed (RFC 9110, 9.2.2).
    private static let safeToRepeat: Set = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]

    /// Bytes read and not yet taken apart.
    private var unread: Int { input.count - consumed }

    /// Takes apart what has come, as far as it goes.
    private func parse() {
        defer {
            if consumed > 0 {
                input.removeFirst(min(consumed, input.count))
                headSearchedTo = max(0, headSearchedTo - consumed)
                lineSearchedTo = max(0, lineSearchedTo - consumed)
                consumed = 0
            }
        }
        while phase == .exchanging {
            guard head != nil else {
                headSearchedTo = max(headSearchedTo, consumed)
                let end = HTTPHead.end(in: input, searchedTo: &headSearchedTo)
                guard let end, end - consumed <= Self.maxHeadBytes else {
                    if end != nil || unread > Self.maxHeadBytes {
                        fail(.malformed, "answer", "the server's answer has no end of its head within \(Self.maxHeadBytes) bytes")
                    }
                    return
                }
                let found = AnswerHead(input[consumed ..< (end - 4)])
                consumed = end
                guard let status = found.status else { return fail(.malformed, "answer", "the server's answer is not HTTP") }
                // 100 Continue and the like come before the answer.
                if (100..<200).contains(status) {
                    if status == 101 { return fail(.malformed, "answer", "the server switched protocols") }
                    continue
                }
                guard let framing = framing(of: found, status: status) else { return }
                self.head = found
                self.framing = framing
                continue
            }
            switch framing {
            case .none:
                return finish(reuse: unread == 0)
            case .length(let length):
                let take = min(length - body.count, unread)
                body.append(contentsOf: input[consumed ..< consumed + take])
                consumed += take
                if body.count == length { return finish(reuse: unread == 0) }
                return
            case .untilClose:
                guard body.count + unread <= limit else { return fail(.tooLarge(limit: limit), "answer", "the answer is over \(limit) bytes") }
                body.append(contentsOf: input[consumed...])
                consumed = input.count
                return
            case .chunked:
                guard chunked() else { return }
            }
        }
    }

    /// How the answer's body is framed; nil (and failed) when the head says something impossible.
    private func framing(of head: AnswerHead, status: Int) -> Framing? {
        let lengthSaid = !head.values("content-length").isEmpty
        if request.method == "HEAD" || status == 204 || status == 304 {
            // A 204 may have no body nor say it has one: one that does may send it after all (HEAD's
            // and 304's lengths are the resource's, and normal).
            lastOnConnection = status == 204 && (lengthSaid || !head.values("transfer-encoding").isEmpty)
            return Framing.none
        }
        if !head.values("transfer-encoding").isEmpty {
            // Both a length and chunks: a server (or a proxy) that may read the body either way (RFC 9112, 6.3).
            lastOnConnection = lengthSaid
            // Chunked last: its chunks say where the body ends. Anything else runs to the close.
            let codings = head.values("transfer-encoding").flatMap { $0.split(separator: ",") }.map { AnswerHead.trimmed($0).lowercased() }
            return codings.last == "chunked" ? .chunked : .untilClose
        }
        let lengths = Set(head.values("content-length").flatMap { $0.split(separator: ",") }.map { AnswerHead.trimmed($0) })
        guard let text = lengths.first else { return .untilClose }
        guard lengths.count == 1, !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let length = Int(text) else {
            fail(.malformed, "answer", "the server's answer has a Content-Length that is not one number")
            return nil
        }
        guard length <= limit else {
            fail(.tooLarge(limit: limit), "answer", "the answer announces \(length) bytes")
            return nil
        }
        return .length(length)
    }

    /// Reads chunks from `input`; false when it needs more bytes (or has finished or failed).
    private func chunked() -> Bool {
        switch chunk {
        case .size:
            guard let line = takeLine(within: 4096) else { return false }
            // The size in hex, then perhaps extensions after ";", which mean nothing here. Hex digits
            // alone: Int(_:radix:) would take a sign, and a size of -1 would never be read past.
            let digits = line.prefix { $0 != UInt8(ascii: ";") && $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }
            guard !digits.isEmpty, digits.count <= 15, digits.allSatisfy(Self.isHexDigit),
                  let size = Int(String(decoding: digits, as: UTF8.self), radix: 16) else {
                fail(.malformed, "answer", "the server's chunked answer has a chunk size that is not a number")
                return false
            }
            guard body.count + size <= limit else {
                fail(.tooLarge(limit: limit), "answer", "the answer is over \(limit) bytes")
                return false
            }
            chunk = size == 0 ? .trailers : .data(size)
        case .data(let left):
            let take = min(left, unread)
            guard take > 0 else { return false }
            body.append(contentsOf: input[consumed ..< consumed + take])
            consumed += take
            chunk = left == take ? .dataEnd : .data(left - take)
        case .dataEnd:
            guard let line = takeLine(within: 2) else { return false }
            guard line.isEmpty else {
                fail(.malformed, "answer", "the server's chunked answer has a chunk longer than its size")
                return false
            }
            chunk = .size
        case .trailers:
            guard let line = takeLine(within: Self.maxHeadBytes - trailerBytes) else { return false }
            trailerBytes += line.count + 2
            if line.isEmpty { finish(reuse: unread == 0) }
        }
        return phase == .exchanging
    }

    /// The next line of `input` without its CR LF, taken out; nil until it has all come. A line
    /// longer than `within` fails the exchange.
    private func takeLine(within: Int) -> [UInt8]? {
        var index = max(lineSearchedTo, consumed)
        while index + 1 < input.count {
            if input[index] == 13 && input[index + 1] == 10 {
                // A line that came whole in one read is held to the bound too.
                guard index - consumed <= within else {
                    fail(.malformed, "answer", "the server's chunked answer has a line too long")
                    return nil
                }
                let line = Array(input[consumed ..< index])
                consumed = index + 2
                lineSearchedTo = consumed
                return line
            }
            index += 1
        }
        lineSearchedTo = index
        if unread > within + 1 { fail(.malformed, "answer", "the server's chunked answer has a line too long") }
        return nil
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }

    /// The whole answer is in.
    private func finish(reuse: Bool) {
        guard let head, let status = head.status else { return }
        let keepsOpen = head.version == "HTTP/1.1" && !head.lists("connection", "close") && !lastOnConnection
        reusable = reuse && keepsOpen && outAt == out.count && mayReuse
        var response = HTTPResponse(status: status, contentType: head.header("content-type"), body: body,
                                    location: (300..<400).contains(status) ? head.header("location") : nil)
        if request.wantsKey { response.serverKey = connection?.shownKey }
        end(.success(response))
    }

    private func fail(_ kind: TransferFailure, _ step: String, _ detail: String) {
        end(.failure(HTTPFailure(kind: kind, function: step, code: 0, detail: detail, method: request.method,
                                 url: ServerAnswers.displayURL(request.url))))
    }

    /// The exchange's end: its connection let go (unless HTTPLoop takes it back to the pool), the result handed on.
    private func end(_ result: Result<HTTPResponse, HTTPFailure>) {
        guard phase != .finished else { return }
        phase = .finished
        if !reusable {
            connection?.close(clean: true)
            connection = nil
        }
        input = []
        out = []
        complete(result)
    }

    /// Hands the result to the waiting task, once. Any thread, before the exchange started.
    func complete(_ result: Result<HTTPResponse, HTTPFailure>) {
        guard !completed else { return }
        completed = true
        phase = .finished
        // For scripts/bench: the start of "answer to first frame played" (see Playback), stamped as the answer ends.
        if let bus, request.method == "POST", case .success = result {
            bus.notice(.debug, "Answer received.", ["monotonic_ns": String(MonotonicClock.nanoseconds()),
                                                    "url": ServerAnswers.displayURL(request.url)])
        }
        done.resume(returning: result)
    }

    /// The connection a finished exchange hands back to the pool, once.
    func takeConnection() -> ClientConnection? {
        defer { connection = nil }
        return reusable ? connection : nil
    }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
