import Foundation
import Glibc
import Testing
@testable import Satellite

/// Code in the test program, which `pageOut` advises; never called (the test writes into it).
private let neverCalled: @convention(c) (Int32) -> Int32 = { $0 &* 3 &+ 1 }

@Suite("code and constants are handed to the kernel to reclaim")
struct ResidentPagesTests {
    /// A figure of /proc/self/status in kB.
    private static func status(_ key: String) -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? -1
        }
        return -1
    }

    /// The permissions ("r--p") of the mapping that holds `address`.
    private static func permissions(of address: UInt) -> String? {
        let maps = (try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8)) ?? ""
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ")
            let range = fields[0].split(separator: "-").compactMap { UInt($0, radix: 16) }
            if range.count == 2, (range[0]..<range[1]).contains(address) { return String(fields[1]) }
        }
        return nil
    }

    @Test("the program's code is reclaimed, and what runs next reads it back")
    func reclaims() {
        let before = Self.status("RssFile")
        let (bytes, refused) = ResidentPages.pageOut()
        let after = Self.status("RssFile")
        #expect(refused == 0)
        #expect(bytes > 1 << 20)
        #expect(before > 0 && after < before, "RssFile \(before) kB before, \(after) kB after")
        // The code paged out runs on: this very test, JSON, the standard library's sorting.
        let sorted = (0..<1000).map { ($0 * 7919) % 1000 }.sorted()
        #expect(sorted == Array(0..<1000))
        #expect(String(decoding: try! JSONEncoder().encode(["a": 1]), as: UTF8.self) == #"{"a":1}"#)
    }

    /// What a debugger's breakpoint, a text relocation or a uprobe does to a read-only page: the
    /// process gets its own copy. MADV_DONTNEED would put the file's bytes back; paging out must not.
    @Test("a read-only page the process has its own copy of keeps it")
    func keepsChangedPages() throws {
        let code = unsafeBitCast(neverCalled, to: UnsafeMutablePointer<UInt8>.self)
        let address = UInt(bitPattern: code)
        let original = try #require(Self.permissions(of: address))
        #expect(original == "r-xp", "the code is in a read-only mapping (\(original))")
        let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
        let start = UnsafeMutableRawPointer(bitPattern: address & ~(page - 1))
        let first = code[0]
        try #require(mprotect(start, Int(page), PROT_READ | PROT_WRITE | PROT_EXEC) == 0)
        code[0] = first ^ 0xff
        #expect(mprotect(start, Int(page), PROT_READ | PROT_EXEC) == 0)

        ResidentPages.pageOut()
        #expect(code[0] == first ^ 0xff)
    }
}
