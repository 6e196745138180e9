import Foundation
import Glibc
import Testing
@testable import Satellite

/// Code in the test program, which `unmap` advises; never called (a test writes into it).
private let neverCalled: @convention(c) (Int32) -> Int32 = { $0 &* 3 &+ 1 }

// One at a time: a round reads pagemap, then unmaps; a page written in between (here, by the
// other test) is lost, which a round beside the test that writes into code would show.
@Suite("the start-up's code and constants are unmapped", .serialized)
struct ResidentPagesTests {
    /// The permissions ("r-xp") of the mapping that holds `address`.
    private static func permissions(of address: UInt) -> String? {
        let maps = (try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8)) ?? ""
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ")
            let range = fields[0].split(separator: "-").compactMap { UInt($0, radix: 16) }
            if range.count == 2, (range[0]..<range[1]).contains(address) { return String(fields[1]) }
        }
        return nil
    }

    @Test("the program's code is unmapped, and what runs next maps it again")
    func unmaps() {
        #expect(ResidentPages.prepare())
        let before = ResidentPages.residentFileKB()
        let (bytes, refused) = ResidentPages.unmap()
        let after = ResidentPages.residentFileKB()
        #expect(refused == 0)
        #expect(bytes > 1 << 20)
        // Megabytes go at once; whatever other suites map again meanwhile is far less.
        #expect(before > 0 && after < before - 1024, "RssFile \(before) kB before, \(after) kB after")
        // The code unmapped runs on: this very test, JSON, the standard library's sorting.
        let sorted = (0..<1000).map { ($0 * 7919) % 1000 }.sorted()
        #expect(sorted == Array(0..<1000))
        #expect(String(decoding: try! JSONEncoder().encode(["a": 1]), as: UTF8.self) == #"{"a":1}"#)
    }

    /// What a debugger's breakpoint, a text relocation or a uprobe does to a read-only page: the
    /// process gets its own copy. Unmapped, the file's bytes would come back; it must be skipped.
    @Test("a read-only page the process has its own copy of keeps it")
    func keepsChangedPages() throws {
        #expect(ResidentPages.prepare())
        let code = unsafeBitCast(neverCalled, to: UnsafeMutablePointer<UInt8>.self)
        let address = UInt(bitPattern: code)
        let original = try #require(Self.permissions(of: address))
        #expect(original == "r-xp", "the code is in a read-only mapping (\(original))")
        let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
        let start = UnsafeMutableRawPointer(bitPattern: address & ~(page - 1))
        let first = code[0]
        try #require(mprotect(start, Int(page), PROT_READ | PROT_WRITE | PROT_EXEC) == 0)
        code[0] = first ^ 0xff
        defer {
            // Put back, in case the compiler folded this function into one that is called.
            _ = mprotect(start, Int(page), PROT_READ | PROT_WRITE | PROT_EXEC)
            code[0] = first
            _ = mprotect(start, Int(page), PROT_READ | PROT_EXEC)
        }
        #expect(mprotect(start, Int(page), PROT_READ | PROT_EXEC) == 0)

        ResidentPages.unmap()
        #expect(code[0] == first ^ 0xff)
    }
}
