import Foundation
import Glibc
import Testing
@testable import Satellite

/// Written at run time, so its page is this process's own copy: unmapping it would lose the value.
nonisolated(unsafe) private var writtenAtRunTime = [Int](repeating: 0, count: 4)
/// Set before main, in a writable segment the file holds: unmapping it would bring the file's value back.
nonisolated(unsafe) private var changedData: Int = 0x5eed

@Suite("the read-only pages are given back")
struct ResidentPagesTests {
    /// This process's file-backed resident memory in kB (RssFile in /proc/self/status).
    private static func residentFileKB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        for line in status.split(separator: "\n") where line.hasPrefix("RssFile:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? -1
        }
        return -1
    }

    @Test("code and constants are unmapped, and what runs next maps them again")
    func unmaps() {
        let before = Self.residentFileKB()
        let (bytes, refused) = ResidentPages.unmapClean()
        let after = Self.residentFileKB()
        #expect(refused == 0)
        #expect(bytes > 1 << 20)
        #expect(before > 0 && after < before, "RssFile \(before) kB before, \(after) kB after")
        // The code unmapped runs on: this very test, JSON, the standard library's sorting.
        let sorted = (0..<1000).map { ($0 * 7919) % 1000 }.sorted()
        #expect(sorted == Array(0..<1000))
        #expect(String(decoding: try! JSONEncoder().encode(["a": 1]), as: UTF8.self) == #"{"a":1}"#)
    }

    @Test("what the process wrote is never given back")
    func keepsWrittenPages() {
        writtenAtRunTime = [3, 1, 4, 1]
        changedData = 42
        ResidentPages.unmapClean()
        #expect(writtenAtRunTime == [3, 1, 4, 1])
        #expect(changedData == 42)
    }
}
