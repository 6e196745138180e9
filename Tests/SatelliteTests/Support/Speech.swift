// Speech for the microphone: espeak-ng says a sentence, sox makes it 16 kHz
// mono s16le with silence around it, as a person in the room would sound.
import Foundation
import TestSupport

enum Speech {
    /// Raw s16le 16 kHz mono: `before` s of silence, the sentence, `after` s of silence.
    static func raw(_ sentence: String, before: Double = 0.5, after: Double = 2.0) async throws -> Data {
        let dir = try Package.temporaryDirectory("speech")
        defer { try? FileManager.default.removeItem(at: dir) }
        let wav = dir.appendingPathComponent("q.wav").path, raw = dir.appendingPathComponent("q.raw").path
        try Spawn.run("espeak-ng", package: "espeak-ng", ["-w", wav, sentence])
        try Spawn.run("sox", package: "sox", [wav, "-r", "16000", "-c", "1", "-b", "16", "-e", "signed", "-t", "raw", raw,
                                              "pad", String(before), String(after)])
        return try Data(contentsOf: URL(fileURLWithPath: raw))
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
