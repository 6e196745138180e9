// What the daemon keeps of its code in memory. Starting runs far more code than
// the steady state does (the config, the first /health, TLS's set-up
// for an https server, the model's loading), and the kernel maps up to 64 KiB around every
// page a fault touches: a streaming daemon had 23 MiB of its files resident
// and went on to use a third of them. So 10 s after start, and once an hour
// after, the pages of every loaded object's code and constants are unmapped
// (CPages/pages.c says how, and why not MADV_PAGEOUT): what is still in use
// is mapped again by its next read, a minor fault while the page cache holds
// it; what is not stays unmapped, in the page cache, for the kernel to take
// when memory is short. BENCHMARKS.md has what it takes off (idle and peak RSS against steady).
import CPages
import Glibc

public enum ResidentPages {
    /// How long after start the first round waits: past READY=1, the first /health and the
    /// stream's connection, the start-up work whose code the steady state does not run again.
    static let first: Duration = .seconds(10)
    /// How often after that: code a turn or a reconnection brought in goes again.
    static let every: Duration = .seconds(3600)

    /// Opens what the rounds read (/proc/self/pagemap); before the process is made undumpable,
    /// after which its /proc belongs to root. False when it cannot: the rounds then do nothing.
    @discardableResult
    public static func prepare() -> Bool { parlour_pages_prepare() == 0 }

    /// Unmaps the read-only segments' pages that are still the file's; returns how many bytes, and
    /// how many ranges the kernel refused (-1: `prepare` failed or never ran, and nothing was done).
    @discardableResult
    static func unmap() -> (bytes: Int, refused: Int) {
        var refused: Int32 = 0
        let bytes = parlour_unmap_code(&refused)
        return (Int(bytes), Int(refused))
    }

    /// This process's file pages resident, in kB (RssFile of /proc/self/status), -1 if unknown.
    static func residentFileKB() -> Int {
        let fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return -1 }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return -1 }
        let text = String(decoding: bytes.prefix(count), as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("RssFile:") }) else { return -1 }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? -1
    }

    /// Unmaps at `first`, then at every `every`, until cancelled; each round is a debug record
    /// with what it unmapped and the file pages resident before and after.
    static func run(bus: EventBus) async {
        var wait = first
        while !Task.isCancelled {
            do { try await Task.sleep(for: wait) } catch { return }
            let before = residentFileKB()
            let (bytes, refused) = unmap()
            // The heap's free pages go back too: start-up's allocations (the config, the first
            // answers, the model's loading) were freed, but malloc keeps their pages, in every arena.
            _ = parlour_trim_heap()
            let after = residentFileKB()
            bus.notice(.debug, "Code unmapped.", ["bytes": String(bytes), "refused": String(refused),
                                                  "rss_file_before_kb": String(before), "rss_file_after_kb": String(after)])
            wait = every
        }
    }
}
