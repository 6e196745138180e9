// What the daemon keeps mapped of its code. Starting touches far more code than
// the steady state runs (the config, the first /health, TLS and curl's set-up,
// the model's loading), and the kernel maps 64 KiB around every page a read
// fault touches: a streaming daemon had 23 MiB of files mapped, of which it
// went on to use 9 (process_madvise MADV_PAGEOUT from outside, then the steady
// RSS read again: 27.1 MiB fell to 12.9; BENCHMARKS.md, "Pages of code given
// back"). So once in a while every page of the loaded objects' read-only
// segments is unmapped (MADV_DONTNEED): the pages stay in the page cache, and
// what is still used is mapped again by its next read, a minor fault each
// (microseconds, no disk). What stays resident is what is in use. Writable
// segments are never touched (CPages/shim.h): their pages may be ours alone.
import CPages

enum ResidentPages {
    /// How long after start the first unmapping waits: past READY=1, the first /health and the
    /// stream's connection, the start-up work whose code the steady state does not run again.
    static let first: Duration = .seconds(10)
    /// How often after that: a turn's code (curl, JSON, playback) is mapped again while it is
    /// in use and given back by the next round.
    static let every: Duration = .seconds(60)

    /// Unmaps the read-only segments' pages; returns how many bytes were advised and how many
    /// segments the kernel refused.
    @discardableResult
    static func unmapClean() -> (bytes: Int, refused: Int) {
        var refused: Int32 = 0
        let bytes = parlour_unmap_clean_pages(&refused)
        return (Int(bytes), Int(refused))
    }

    /// Unmaps at `first`, then at every `every`, until cancelled.
    static func run() async {
        var wait = first
        while !Task.isCancelled {
            do { try await Task.sleep(for: wait) } catch { return }
            unmapClean()
            wait = every
        }
    }
}
