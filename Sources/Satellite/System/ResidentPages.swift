// What the daemon keeps of its code in memory. Starting runs far more code than
// the steady state does (the config, the first /health, curl's and TLS's
// set-up, the model's loading), and the kernel maps and reads ahead 64 KiB and
// more around every page a fault touches: a streaming daemon had 23 MiB of its
// files resident and went on to use 9. So a while after start, and once an
// hour after, the pages of every loaded object's code and constants are handed
// to the kernel to reclaim (MADV_PAGEOUT, CPages/pages.c): those only this
// daemon maps are freed, and what is still in use is read back by its next
// fault, from the page cache or the disk, once. What stays resident is what
// is in use. Measured in BENCHMARKS.md, "Code paged out".
import CPages

enum ResidentPages {
    /// How long after start the first round waits: past READY=1, the first /health and the
    /// stream's connection, the start-up work whose code the steady state does not run again.
    static let first: Duration = .seconds(10)
    /// How often after that: code a turn or a reconnection brought in goes again, and what the
    /// steady state reads back (a few MiB, from the disk if the kernel dropped it) is read once an hour.
    static let every: Duration = .seconds(3600)

    /// Hands the read-only segments' pages to the kernel; returns how many bytes were advised
    /// and how many segments the kernel refused.
    @discardableResult
    static func pageOut() -> (bytes: Int, refused: Int) {
        var refused: Int32 = 0
        let bytes = parlour_page_out_code(&refused)
        return (Int(bytes), Int(refused))
    }

    /// Pages out at `first`, then at every `every`, until cancelled; each round is a debug record.
    static func run(bus: EventBus) async {
        var wait = first
        while !Task.isCancelled {
            do { try await Task.sleep(for: wait) } catch { return }
            let (bytes, refused) = pageOut()
            bus.notice(.debug, "Code paged out.", ["bytes": String(bytes), "refused": String(refused)])
            wait = every
        }
    }
}
