// Gathers the microphone's 20 ms periods into 80 ms messages for the /listen
// socket. The server cuts what it gets into 80 ms frames (1280 samples) and can
// judge nothing sooner, so sending each period alone would only quadruple the
// messages (and per-message work on both sides) for no gain in latency.

/// Collects samples and hands them out as S16_LE bytes in blocks of `samples`.
public struct FrameBatcher: Sendable {
    public let samples: Int
    private var pending: [Int16] = []

    /// `samples` per block; 1280 is the server's 80 ms frame.
    public init(samples: Int = 1280) {
        self.samples = samples
        pending.reserveCapacity(samples * 2)
    }

    /// Adds samples; returns the whole blocks now ready, joined, or nil when none is.
    public mutating func add(_ more: [Int16]) -> [UInt8]? {
        pending.append(contentsOf: more)
        let whole = pending.count / samples * samples
        guard whole > 0 else { return nil }
        let data = Self.bytes(pending[..<whole])
        pending.removeFirst(whole)
        return data
    }

    /// What is left (less than a block), emptied; nil when nothing is.
    public mutating func flush() -> [UInt8]? {
        guard !pending.isEmpty else { return nil }
        defer { pending.removeAll(keepingCapacity: true) }
        return Self.bytes(pending[...])
    }

    /// Forgets what was gathered (audio that must not be sent).
    public mutating func reset() { pending.removeAll(keepingCapacity: true) }

    /// The samples as S16_LE bytes. One copy of the whole block: appending a byte at a
    /// time cost about 750 instructions a byte, nine tenths of the daemon's work while streaming.
    private static func bytes(_ samples: ArraySlice<Int16>) -> [UInt8] {
        #if _endian(little)
        return samples.withUnsafeBytes { Array($0) }
        #else
        return samples.map(\.littleEndian).withUnsafeBytes { Array($0) }
        #endif
    }
}
