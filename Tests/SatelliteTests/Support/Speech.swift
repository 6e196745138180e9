// Speech for the microphone, as a person in the room would sound: TestSupport's
// espeak-ng recordings as the raw s16le a file-backed microphone reads.
import Foundation
import TestSupport

extension Speech {
    /// Raw s16le 16 kHz mono: `before` s of silence, the sentence, `after` s of silence.
    static func raw(_ sentence: String, before: Double = 0.5, after: Double = 2.0) async throws -> Data {
        // espeak-ng and sox are waited for on a thread of their own, not one of the pool's two.
        let samples = try await OwnThread.run {
            try recording(sentence, leadingMs: Int(before * 1000), trailingMs: Int(after * 1000)).samples
        }
        return samples.withUnsafeBufferPointer { Data(buffer: $0) }
    }

    /// `seconds` of digital silence.
    static func silence(_ seconds: Double) -> Data { Data(count: Int(seconds * 16000) * 2) }

    /// Samples of raw s16le audio.
    static func samples(_ data: Data) -> [Int16] {
        data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// Zero crossings per second: a sine's frequency, twice over.
    static func crossingsPerSecond(_ samples: [Int16], rate: Int = 16000) -> Double {
        guard samples.count > 1 else { return 0 }
        var crossings = 0
        for i in 1..<samples.count where (samples[i - 1] < 0) != (samples[i] < 0) { crossings += 1 }
        return Double(crossings) * Double(rate) / Double(samples.count)
    }
}
