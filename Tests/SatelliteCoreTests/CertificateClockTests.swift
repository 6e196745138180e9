// A certificate check that failed, told apart: this machine's clock, or the server.
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite struct CertificateClockTests {
    static let built = WallTime(iso8601: "2026-12-01T00:00:00Z")!
    static let set = WallTime(iso8601: "2026-12-07T02:00:00Z")!
    static let savedTime = WallTime(iso8601: "2025-03-01T00:00:00Z")!
    static let future = WallTime(iso8601: "2031-06-01T00:00:00Z")!

    /// (verify result, the wall clock, the program's build date, what it means).
    static let table: [(Int, WallTime, WallTime?, CertificateClock)] = [
        (0, set, built, .trusted),
        (0, WallTime(seconds: 0), built, .trusted),  // vouched for: no matter the clock
        (9, set, built, .clockWrong(now: set)),  // X509_V_ERR_CERT_NOT_YET_VALID
        (11, set, built, .clockWrong(now: set)),  // X509_V_ERR_CRL_NOT_YET_VALID
        (9, future, nil, .clockWrong(now: future)),
        (20, WallTime(seconds: 0), nil, .clockWrong(now: WallTime(seconds: 0))),  // 1970: whatever OpenSSL says
        (20, WallTime(seconds: -1), built, .clockWrong(now: WallTime(seconds: -1))),
        (18, savedTime, built, .clockWrong(now: savedTime)),  // before the program was built
        (18, savedTime, nil, .untrusted(reason: "why")),  // 2025 with no build date: could be right
        (20, set, built, .untrusted(reason: "why")),  // X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY
        (10, set, built, .untrusted(reason: "why")),  // X509_V_ERR_CERT_HAS_EXPIRED, by a clock that is set
        (62, set, built, .untrusted(reason: "why")),  // X509_V_ERR_HOSTNAME_MISMATCH
        (18, WallTime(seconds: Int64.max), built, .untrusted(reason: "why")),
    ]

    @Test("the verify result and the wall clock give the cause", arguments: table.indices)
    func classify(row: Int) {
        let (result, now, built, expected) = Self.table[row]
        #expect(CertificateClock.classify(verifyResult: result, reason: "why", now: now, built: built) == expected)
    }

    @Test("a set clock: 2024 or later, and not over a day before the build")
    func isSet() {
        #expect(WallTime.earliest.isSet(built: nil))
        #expect(!WallTime(seconds: WallTime.earliest.seconds - 1).isSet(built: nil))
        #expect(WallTime(seconds: Self.built.seconds - 86_400).isSet(built: Self.built))
        #expect(!WallTime(seconds: Self.built.seconds - 86_401).isSet(built: Self.built))
    }

    @Test("the error says the clock is wrong, what it says, and how to set it; not that the server is untrusted")
    func error() {
        let error = ServerAnswers.failure(.clockWrong(now: WallTime(seconds: 0)), route: .health, url: "https://parlour.example", detail: "")
        #expect(error.message.hasPrefix(ServerAnswers.clockWrongLead))
        #expect(error.message.contains("1970-01-01T00:00:00Z"))
        #expect(error.message.contains("https://parlour.example"))
        #expect(error.message.contains("timedatectl set-ntp true"))
        #expect(!error.message.contains("trust"))
    }
}
