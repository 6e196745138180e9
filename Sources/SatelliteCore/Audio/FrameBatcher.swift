// Gathers the microphone's 20 ms periods into 80 ms messages for the /listen
// socket. The server cuts what it gets into 80 ms frames (1280 samples) and can
// judge nothing sooner, so sending each period alone would only quadruple the
// messages (and per-message work on both sides) for no gain in latency.
import Foundation

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
    public mutating func add(_ more: [Int16]) -> Data? {
        pending.append(contentsOf: more)
        let whole = pending.count / samples * samples
        guard whole > 0 else { return nil }
        let data = Self.bytes(pending[..<whole])
        pending.removeFirst(whole)
        return data
    }

    /// What is left (less than a block), emptied; nil when nothing is.
    public mutating func flush() -> Data? {
        guard !pending.isEmpty else { return nil }
        defer { pending.removeAll(keepingCapacity: true) }
        return Self.bytes(pending[...])
    }

    /// Forgets what was gathered (audio that must not be sent).
    public mutating func reset() { pending.removeAll(keepingCapacity: true) }

    private static func bytes(_ samples: ArraySlice<Int16>) -> Data {
        samples.withUnsafeBufferPointer { buffer in
            var data = Data(capacity: buffer.count * 2)
            for sample in buffer {
                let little = UInt16(bitPattern: sample)
                data.append(UInt8(truncatingIfNeeded: little))
                data.append(UInt8(truncatingIfNeeded: little >> 8))
            }
            return data
        }
    }
}
