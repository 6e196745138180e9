// HTTP over libcurl's easy interface. curl_easy_perform blocks, so each request
// runs on a thread of its own, never on Swift's cooperative pool. Easy to get
// wrong: a cancelled task must stop the transfer (the progress callback aborts
// it), and curl must never send the token anywhere but the URL it was given:
// no redirects, no proxies, http and https only.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import CCurl
import COpenSSL
import SatelliteCore
import Synchronization

/// Sends HTTP requests, one thread per request. Holds no state between them.
public final class HTTPClient: Sendable {
    /// The largest answer body accepted. A reply WAV arrives as base64 of float32
    /// samples at 24 kHz, about 128 KB a second, so a long answer runs to megabytes.
    public let bodyLimit: Int
    /// Where to say when each POST's answer was all in (a debug notice for scripts/bench).
    private let bus: EventBus?

    public init(bodyLimit: Int = 16 << 20, bus: EventBus? = nil) {
        _ = HTTPClient.globalInit
        self.bodyLimit = bodyLimit
        self.bus = bus
    }

    // curl_global_init is not safe to race with itself; a static is initialised once.
    private static let globalInit: CURLcode = curl_global_init(Int(CURL_GLOBAL_ALL))

    /// Makes the request and returns any answer, whatever its status.
    /// If the calling task is cancelled, the transfer stops within about a second
    /// (curl calls the progress callback at least that often) and this throws `.cancelled`.
    public func send(_ request: HTTPRequest) async throws(HTTPFailure) -> HTTPResponse {
        let transfer = Transfer(request: request, limit: bodyLimit)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Result<HTTPResponse, HTTPFailure>, Never>) in
                let started = SystemThread.start(name: "http") {
                    let result = transfer.run()
                    // For scripts/bench: the start of "answer to first frame played" (see Playback).
                    if let bus = self.bus, request.method == "POST", case .success = result {
                        bus.notice(.debug, "Answer received.", ["monotonic_ns": String(MonotonicClock.nanoseconds()),
                                                                "url": ServerAnswers.displayURL(request.url)])
                    }
                    done.resume(returning: result)
                }
                // No thread to be had is an answer too, never a continuation left waiting.
                if !started {
                    done.resume(returning: .failure(HTTPFailure(kind: .other, function: "pthread_create", code: 0,
                        detail: "no thread could be started for the request", method: request.method,
                        url: ServerAnswers.displayURL(request.url))))
                }
            }
        } onCancel: {
            transfer.cancelled.store(true, ordering: .relaxed)
        }
        return try result.get()
    }
}

/// One request's life on its own thread. Everything but `cancelled` is touched
/// only by that thread (and by curl's callbacks, which run on it).
private final class Transfer: @unchecked Sendable {
    let request: HTTPRequest
    let limit: Int
    /// Set from whatever thread cancels the task; read by the progress callback.
    let cancelled = Atomic<Bool>(false)
    var received = Data()
    var overLimit = false

    init(request: HTTPRequest, limit: Int) {
        self.request = request
        self.limit = limit
    }

    func run() -> Result<HTTPResponse, HTTPFailure> {
        guard let handle = curl_easy_init() else {
            return .failure(failure(.other, function: "curl_easy_init", code: -1, detail: "curl could not start a transfer"))
        }
        defer { curl_easy_cleanup(handle) }
        let errorText = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errorText.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        defer { errorText.deallocate() }
        var headers: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headers) }
        var resolve: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(resolve) }

        do {
            try configure(handle, errorText: errorText, headers: &headers, resolve: &resolve)
        } catch {
            return .failure(error)
        }
        if cancelled.load(ordering: .relaxed) {
            return .failure(failure(.cancelled, function: "curl_easy_perform", code: Int(CURLE_ABORTED_BY_CALLBACK.rawValue), detail: "cancelled before it started"))
        }

        let code = curl_easy_perform(handle)
        if code != CURLE_OK {
            let text = String(cString: errorText)
            let detail = text.isEmpty ? String(cString: curl_easy_strerror(code)) : text
            return .failure(failure(kind(of: code, handle: handle), function: "curl_easy_perform", code: Int(code.rawValue), detail: detail))
        }

        var status = 0
        _ = curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        var type: UnsafeMutablePointer<CChar>?
        _ = curl_getinfo_string(handle, CURLINFO_CONTENT_TYPE, &type)
        // Where a redirect points, for the person: curl works it out without following it.
        var location: UnsafeMutablePointer<CChar>?
        if (300..<400).contains(status) { _ = curl_getinfo_string(handle, CURLINFO_REDIRECT_URL, &location) }
        var response = HTTPResponse(status: status, contentType: type.map { String(cString: $0) }, body: received,
                                    location: location.map { String(cString: $0) })
        if request.wantsKey { response.serverKey = serverKey(handle) }
        return .success(response)
    }

    /// The SHA-256 of the server certificate's public key, from curl's certificate info (PEM).
    private func serverKey(_ handle: UnsafeMutableRawPointer) -> String? {
        var info: UnsafeMutablePointer<curl_certinfo>?
        guard curl_getinfo_certinfo(handle, &info) == CURLE_OK, let info, info.pointee.num_of_certs > 0,
              var item = info.pointee.certinfo[0] else { return nil }
        while true {
            let line = String(cString: item.pointee.data)
            if line.hasPrefix("Cert:") {
                var digest = [UInt8](repeating: 0, count: 32)
                guard copenssl_pem_spki_sha256(String(line.dropFirst("Cert:".count)), &digest) == 0 else { return nil }
                return ServerKey.text(digest: digest)
            }
            guard let next = item.pointee.next else { return nil }
            item = next
        }
    }

    private func configure(_ handle: UnsafeMutableRawPointer, errorText: UnsafeMutablePointer<CChar>,
                           headers: inout UnsafeMutablePointer<curl_slist>?,
                           resolve: inout UnsafeMutablePointer<curl_slist>?) throws(HTTPFailure) {
        func check(_ code: CURLcode, _ option: String) throws(HTTPFailure) {
            guard code == CURLE_OK else {
                throw failure(.other, function: "curl_easy_setopt", code: Int(code.rawValue), detail: "\(option): \(String(cString: curl_easy_strerror(code)))")
            }
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        try check(curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorText), "CURLOPT_ERRORBUFFER")
        try check(curl_setopt_string(handle, CURLOPT_URL, request.url), "CURLOPT_URL")
        // Signals and threads do not mix; this also means name lookups use curl's threaded resolver.
        try check(curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1), "CURLOPT_NOSIGNAL")
        // A redirect could carry the Authorization header to another host: a 3xx is an answer.
        try check(curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0), "CURLOPT_FOLLOWLOCATION")
        try check(curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"), "CURLOPT_PROTOCOLS_STR")
        // curl would otherwise take a proxy from http_proxy and friends, and over
        // plain http that proxy would read the token. The server is on the house network.
        try check(curl_setopt_string(handle, CURLOPT_NOPROXY, "*"), "CURLOPT_NOPROXY")
        if let key = request.pinnedKey {
            // The pinned key proves the server (a self-signed certificate is the usual case):
            // curl checks it before anything is sent, and another key ends the transfer.
            try check(curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 0), "CURLOPT_SSL_VERIFYPEER")
            try check(curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 0), "CURLOPT_SSL_VERIFYHOST")
            try check(curl_setopt_string(handle, CURLOPT_PINNEDPUBLICKEY, ServerKey.curlPin(key)), "CURLOPT_PINNEDPUBLICKEY")
        } else if !request.verifyPeer {
            try check(curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 0), "CURLOPT_SSL_VERIFYPEER")
            try check(curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 0), "CURLOPT_SSL_VERIFYHOST")
        }
        if request.wantsKey { try check(curl_setopt_long(handle, CURLOPT_CERTINFO, 1), "CURLOPT_CERTINFO") }
        if let address = ServerAddress(request.url),
           let entry = PinMoves.resolveEntry(host: address.host, port: address.port, addresses: request.addresses) {
            guard let list = curl_slist_append(nil, entry) else {
                throw failure(.other, function: "curl_slist_append", code: -1, detail: "out of memory")
            }
            resolve = list
            try check(curl_setopt_slist(handle, CURLOPT_RESOLVE, list), "CURLOPT_RESOLVE")
        }
        try check(curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, request.connectTimeout.milliseconds), "CURLOPT_CONNECTTIMEOUT_MS")
        try check(curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, request.totalTimeout.milliseconds), "CURLOPT_TIMEOUT_MS")
        // Refuses an announced oversized body at once; the write callback catches the rest.
        try check(curl_setopt_off_t(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(limit)), "CURLOPT_MAXFILESIZE_LARGE")

        try check(curl_setopt_write(handle, { data, size, count, user in
            let transfer = Unmanaged<Transfer>.fromOpaque(user!).takeUnretainedValue()
            let bytes = size * count
            guard transfer.received.count + bytes <= transfer.limit else {
                transfer.overLimit = true
                return 0  // anything but `bytes` makes curl stop with CURLE_WRITE_ERROR
            }
            if let data { transfer.received.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: bytes) }
            return bytes
        }), "CURLOPT_WRITEFUNCTION")
        try check(curl_setopt_pointer(handle, CURLOPT_WRITEDATA, me), "CURLOPT_WRITEDATA")
        try check(curl_setopt_progress(handle, { user, _, _, _, _ in
            let transfer = Unmanaged<Transfer>.fromOpaque(user!).takeUnretainedValue()
            return transfer.cancelled.load(ordering: .relaxed) ? 1 : 0  // non-zero aborts the transfer
        }), "CURLOPT_XFERINFOFUNCTION")
        try check(curl_setopt_pointer(handle, CURLOPT_XFERINFODATA, me), "CURLOPT_XFERINFODATA")
        try check(curl_setopt_long(handle, CURLOPT_NOPROGRESS, 0), "CURLOPT_NOPROGRESS")

        switch request.method {
        case "GET":
            try check(curl_setopt_long(handle, CURLOPT_HTTPGET, 1), "CURLOPT_HTTPGET")
        case "POST":
            try check(curl_setopt_long(handle, CURLOPT_POST, 1), "CURLOPT_POST")
        default:
            try check(curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method), "CURLOPT_CUSTOMREQUEST")
        }
        if let body = request.body {
            try check(curl_setopt_off_t(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)), "CURLOPT_POSTFIELDSIZE_LARGE")
            // COPYPOSTFIELDS: curl keeps its own copy, so the body's lifetime is not a question.
            let code = body.isEmpty
                ? curl_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, "")
                : body.withUnsafeBytes { curl_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0.baseAddress)) }
            try check(code, "CURLOPT_COPYPOSTFIELDS")
        } else if request.method == "POST" {
            try check(curl_setopt_off_t(handle, CURLOPT_POSTFIELDSIZE_LARGE, 0), "CURLOPT_POSTFIELDSIZE_LARGE")
            try check(curl_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, ""), "CURLOPT_COPYPOSTFIELDS")
        }

        // An empty Expect stops curl from waiting up to a second for "100 Continue" before a large body.
        for line in request.headers.map({ "\($0.name): \($0.value)" }) + ["Expect:"] {
            guard let list = curl_slist_append(headers, line) else {
                throw failure(.other, function: "curl_slist_append", code: -1, detail: "out of memory")
            }
            headers = list
        }
        try check(curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headers), "CURLOPT_HTTPHEADER")
    }

    /// Sorts curl's code into the few outcomes a caller tells apart.
    private func kind(of code: CURLcode, handle: UnsafeMutableRawPointer) -> TransferFailure {
        switch code {
        case CURLE_COULDNT_CONNECT: return .couldNotConnect
        case CURLE_COULDNT_RESOLVE_HOST: return .couldNotResolve
        case CURLE_OPERATION_TIMEDOUT:
            // curl uses one code for both timeouts; a connection never made tells them apart.
            var connected: curl_off_t = 0
            _ = curl_getinfo_off_t(handle, CURLINFO_CONNECT_TIME_T, &connected)
            return connected == 0
                ? .connectTimeout(seconds: request.connectTimeout.seconds)
                : .timeout(seconds: request.totalTimeout.seconds)
        case CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_SEND_ERROR: return .closedMidAnswer
        case CURLE_FILESIZE_EXCEEDED: return .tooLarge(limit: limit)
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH: return .keyChanged(pinned: request.pinnedKey ?? "")
        case CURLE_PEER_FAILED_VERIFICATION: return .unverified
        case CURLE_WRITE_ERROR where overLimit: return .tooLarge(limit: limit)
        case CURLE_ABORTED_BY_CALLBACK where cancelled.load(ordering: .relaxed): return .cancelled
        default: return .other
        }
    }

    private func failure(_ kind: TransferFailure, function: String, code: Int, detail: String) -> HTTPFailure {
        HTTPFailure(kind: kind, function: function, code: code, detail: detail, method: request.method, url: ServerAnswers.displayURL(request.url))
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
