// SSL_CERT_FILE is the process's, and OpenSSL (under libcurl and the /listen socket alike) reads it
// at each connection: tests that put their own certificate there take turns, or one test's
// connection reads another's store. Replaced in place and put back, never unset: TestEnvironment
// says why.
import Glibc
import Synchronization

/// Runs `body` with SSL_CERT_FILE naming `path`, no other test's store in place meanwhile.
func withCertificateStore<T>(_ path: String, _ body: () async throws -> T) async rethrows -> T {
    await CertificateStoreTurns.shared.take()
    let before = String(cString: getenv("SSL_CERT_FILE"))
    setenv("SSL_CERT_FILE", path, 1)
    defer {
        setenv("SSL_CERT_FILE", before, 1)
        CertificateStoreTurns.shared.give()
    }
    return try await body()
}

/// One turn at a time, in the order asked.
private final class CertificateStoreTurns: Sendable {
    static let shared = CertificateStoreTurns()
    private let state = Mutex<(busy: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    func take() async {
        await withCheckedContinuation { (turn: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard state.busy else { state.busy = true; return true }
                state.waiting.append(turn)
                return false
            }
            if now { turn.resume() }
        }
    }

    func give() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else { state.busy = false; return nil }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
