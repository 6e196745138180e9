// One HTTP request as a libcurl easy handle: the options that keep the token
// with the pinned server, the answer collected, and the failure sorted into
// the outcomes a caller tells apart. HTTPLoop runs it; every call here is
// made on HTTPLoop's thread. Easy to get wrong: curl must never send the
// token anywhere but the URL it was given: no redirects, no proxies, http
// and https only, the pinned addresses and key.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import CCurl
import COpenSSL
import SatelliteCore
import Synchronization

/// One request, from its easy handle's options to its result. Everything but `cancelled` is
/// touched only by HTTPLoop's thread (and by curl's callbacks, which run on it).
final class HTTPTransfer: @unchecked Sendable {
    let request: HTTPRequest
    let limit: Int
    /// Set from whatever thread cancels the task; read when the loop takes the transfer.
    let cancelled = Atomic<Bool>(false)
    /// Which connections this transfer may reuse (HTTPLoop keeps one cache for each).
    let pool: String
    /// The HTTPClient it came from (the first part of `pool`).
    let client: String
    private let bus: EventBus?
    private let done: CheckedContinuation<Result<HTTPResponse, HTTPFailure>, Never>
    private var received = Data()
    private var overLimit = false
    private(set) var handle: UnsafeMutableRawPointer?
    private let errorText: UnsafeMutablePointer<CChar>
    private var headers: UnsafeMutablePointer<curl_slist>?
    private var resolve: UnsafeMutablePointer<curl_slist>?
    private var completed = false

    /// `client` names the HTTPClient's connections: one client's are never another's.
    init(request: HTTPRequest, limit: Int, client: String, bus: EventBus?,
         done: CheckedContinuation<Result<HTTPResponse, HTTPFailure>, Never>) {
        self.request = request
        self.limit = limit
        self.bus = bus
        self.done = done
        self.client = client
        // The same host, port, addresses and TLS expectations: a connection made for one such
        // request is one any of them could have made, so it may carry the next.
        let address = ServerAddress(request.url)
        pool = [client, address?.scheme ?? "", address?.host.lowercased() ?? "", String(address?.port ?? 0),
                request.addresses.joined(separator: ","), request.pinnedKey ?? "", String(request.verifyPeer)].joined(separator: "\n")
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
        guard let handle = curl_easy_init() else {
            throw failure(.other, function: "curl_easy_init", code: -1, detail: "curl could not start a transfer")
        }
        self.handle = handle
        try configure(handle, share: share)
        return handle
    }

    /// Frees the easy handle, on the loop's thread (it uses the pool's share, which has no lock).
    func close() {
        if let handle { curl_easy_cleanup(handle) }
        handle = nil
    }

    /// The transfer ended with `code` (CURLMsg's result): its answer or its failure.
    func result(_ code: CURLcode) -> Result<HTTPResponse, HTTPFailure> {
        guard let handle else { return .failure(failure(.other, function: "curl_easy_init", code: -1, detail: "no transfer")) }
        if code != CURLE_OK {
            let text = String(cString: errorText)
            let detail = text.isEmpty ? String(cString: curl_easy_strerror(code)) : text
            return .failure(failure(kind(of: code, handle: handle), function: "curl_multi_perform", code: Int(code.rawValue), detail: detail))
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

    /// The failure of a transfer stopped by its task's cancellation.
    func cancelledFailure(_ detail: String) -> HTTPFailure {
        failure(.cancelled, function: "curl_multi_remove_handle", code: Int(CURLE_ABORTED_BY_CALLBACK.rawValue), detail: detail)
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

    private func configure(_ handle: UnsafeMutableRawPointer, share: UnsafeMutableRawPointer) throws(HTTPFailure) {
        func check(_ code: CURLcode, _ option: String) throws(HTTPFailure) {
            guard code == CURLE_OK else {
                throw failure(.other, function: "curl_easy_setopt", code: Int(code.rawValue), detail: "\(option): \(String(cString: curl_easy_strerror(code)))")
            }
        }
        // HTTPLoop holds the transfer while curl may call back into it.
        let me = Unmanaged.passUnretained(self).toOpaque()
        try check(curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorText), "CURLOPT_ERRORBUFFER")
        // The connections (and the CURLOPT_RESOLVE entries) of this pool alone: see `pool`.
        try check(curl_setopt_pointer(handle, CURLOPT_SHARE, share), "CURLOPT_SHARE")
        try check(curl_setopt_string(handle, CURLOPT_URL, request.url), "CURLOPT_URL")
        // Signals and threads do not mix. (Names are looked up before: HTTPClient gives every request its addresses.)
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
        if request.wantsKey {
            // The key is read in the handshake: a connection of its own, left to nobody after.
            try check(curl_setopt_long(handle, CURLOPT_CERTINFO, 1), "CURLOPT_CERTINFO")
            try check(curl_setopt_long(handle, CURLOPT_FRESH_CONNECT, 1), "CURLOPT_FRESH_CONNECT")
            try check(curl_setopt_long(handle, CURLOPT_FORBID_REUSE, 1), "CURLOPT_FORBID_REUSE")
        }
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
            let transfer = Unmanaged<HTTPTransfer>.fromOpaque(user!).takeUnretainedValue()
            let bytes = size * count
            guard transfer.received.count + bytes <= transfer.limit else {
                transfer.overLimit = true
                return 0  // anything but `bytes` makes curl stop with CURLE_WRITE_ERROR
            }
            if let data { transfer.received.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: bytes) }
            return bytes
        }), "CURLOPT_WRITEFUNCTION")
        try check(curl_setopt_pointer(handle, CURLOPT_WRITEDATA, me), "CURLOPT_WRITEDATA")

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
            // curl uses one code for both timeouts; a connection never made tells them apart
            // (a reused one counts as connected from the transfer's first microseconds).
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
