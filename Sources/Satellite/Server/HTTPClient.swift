// HTTP for the daemon: a request goes to HTTPLoop, one thread for every
// transfer (libcurl's multi interface), and the calling task waits without
// holding a thread. Easy to get wrong: a cancelled task must stop the
// transfer (HTTPLoop ends it at once), and the token must go to the URL it
// was given and nowhere else (HTTPTransfer). A host nobody pinned is looked up here, on
// BlockingThread.lookups, and its addresses go with the request like pinned ones:
// the HTTP thread never waits on DNS.
import SatelliteCore
import Synchronization

/// Sends HTTP requests. Its connections are its own: no other client's request reuses them.
public final class HTTPClient: Sendable {
    /// The largest answer body accepted. A reply WAV arrives as base64 of float32
    /// samples at 24 kHz, about 128 KB a second, so a long answer runs to megabytes.
    public let bodyLimit: Int
    /// Where to say when each POST's answer was all in (a debug notice for scripts/bench).
    private let bus: EventBus?
    /// Names this client's connection pools in HTTPLoop.
    private let name: String

    /// Whether a request went out, so that the loop has connections of this client to close.
    private let used = Atomic<Bool>(false)

    private static let count = Atomic<Int>(0)

    public init(bodyLimit: Int = 16 << 20, bus: EventBus? = nil) {
        self.bodyLimit = bodyLimit
        self.bus = bus
        name = "client \(Self.count.add(1, ordering: .relaxed).newValue)"
    }

    deinit {
        if used.load(ordering: .relaxed) { HTTPLoop.shared.forget(name) }
    }

    /// Makes the request and returns any answer, whatever its status.
    /// If the calling task is cancelled, the transfer stops and this throws `.cancelled`.
    public func send(_ request: HTTPRequest) async throws(HTTPFailure) -> HTTPResponse {
        var request = request
        // Read once, as curl is given it: the name looked up is the one in Host, SNI and the certificate
        // check, and the pool's key. A URL it cannot read is not looked up: the exchange fails on it.
        let target = Result { () throws(ServerTarget.Unusable) in try ServerTarget(url: request.url, schemes: ("http", "https")) }
        if request.addresses.isEmpty, case .success(let address) = target, !PinMoves.isAddress(address.name) {
            // As at pinning: a scoped (fe80::…%if) address is left out (PinMoves.pinnable).
            request.addresses = PinMoves.pinnable(host: address.name, resolved: await NameLookup.addresses(of: address.name))
            if Task.isCancelled {
                throw HTTPFailure(kind: .cancelled, function: "getaddrinfo", code: 0,
                                  detail: "cancelled while looking up \(address.name)", method: request.method,
                                  url: ServerAnswers.displayURL(request.url))
            }
            guard !request.addresses.isEmpty else {
                throw HTTPFailure(kind: .couldNotResolve, function: "getaddrinfo", code: 0,
                                  detail: "Could not resolve host: \(address.name)", method: request.method,
                                  url: ServerAnswers.displayURL(request.url))
            }
        }
        let box = Mutex<HTTPTransfer?>(nil)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Result<HTTPResponse, HTTPFailure>, Never>) in
                let transfer = HTTPTransfer(request: request, target: target, limit: bodyLimit, client: name, bus: bus, done: done)
                let cancelled = box.withLock { held in
                    held = transfer
                    return Task.isCancelled
                }
                if cancelled { transfer.cancelled.store(true, ordering: .relaxed) }
                used.store(true, ordering: .relaxed)
                HTTPLoop.shared.add(transfer)
            }
        } onCancel: {
            guard let transfer = box.withLock({ $0 }) else { return }
            transfer.cancelled.store(true, ordering: .relaxed)
            HTTPLoop.shared.cancel(transfer)
        }
        return try result.get()
    }
}
