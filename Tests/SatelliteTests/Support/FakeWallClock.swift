// A daemon's wall clock, moved while it runs: Debian's libfaketime preloaded
// into it (it replaces glibc's clock_gettime, which Swift's Glibc calls), told
// what CLOCK_REALTIME says by a file it reads again at every call. CLOCK_MONOTONIC
// and CLOCK_BOOTTIME stay true, as a clock that NTP sets leaves them.
import Foundation
import TestSupport

struct FakeWallClock: Sendable {
    static let library = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
    let file: String

    /// A clock that says `spec` (libfaketime's: "+0", "-7200" seconds from the true time, "@1970-01-02 00:00:00").
    init(in dir: URL, _ spec: String) throws {
        guard FileManager.default.fileExists(atPath: Self.library) else {
            throw TestFailure("libfaketime is not installed (scripts/deps --test installs faketime)")
        }
        file = dir.appendingPathComponent("wall-clock").path
        try set(spec)
    }

    /// The daemon's environment for it.
    var environment: [String: String] {
        ["LD_PRELOAD": Self.library, "FAKETIME_TIMESTAMP_FILE": file, "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"]
    }

    /// Moves the clock: the daemon's next reading says `spec`.
    func set(_ spec: String) throws {
        try (spec + "\n").write(toFile: file, atomically: true, encoding: .utf8)
    }
}
