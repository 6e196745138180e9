// Real speech for the tests (the endpointer's, and the microphone's): espeak-ng says a sentence, sox makes it
// 16 kHz mono 16-bit with silence around it and mixes in noise at a chosen SNR.
// A missing tool fails the test with the package to install; it never skips it.

import Foundation

/// Speech recordings made on the spot in a temporary directory.
public enum Speech {
    public enum Noise: String, Sendable {
        case white = "whitenoise"
        case brown = "brownnoise"
    }

    /// 16 kHz mono samples, and where the spoken part starts and ends.
    public struct Recording {
        public var samples: [Int16]
        public var speechStartMs: Int
        public var speechEndMs: Int
        /// The noise that was mixed in, alone, at the same level; nil for clean speech.
        public var noiseOnly: [Int16]?
    }


    public static let sampleRate = 16_000
    public static let rawFormat = ["-t", "raw", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed"]

    /// `text` spoken by espeak-ng with `leadingMs` of silence before and `trailingMs` after,
    /// mixed with `noise` so that the spoken part is `snrDB` louder than the noise; in espeak-ng's
    /// `voice` (its -v, e.g. "en-us", "en+f3") at `wordsPerMinute` (its -s) when given.
    public static func recording(
        _ text: String, leadingMs: Int = 500, trailingMs: Int = 2_000, noise: Noise? = nil, snrDB: Double = 12,
        voice: String? = nil, wordsPerMinute: Int? = nil
    ) throws -> Recording {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("speech-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

        let options = (voice.map { ["-v", $0] } ?? []) + (wordsPerMinute.map { ["-s", String($0)] } ?? [])
        try Spawn.run("espeak-ng", package: "espeak-ng", options + ["-w", path("said.wav"), text])
        try Spawn.run("sox", package: "sox", [path("said.wav")] + rawFormat + [path("clean.raw"),
            "pad", seconds(leadingMs), seconds(trailingMs)])
        let clean = try read(path("clean.raw"))
        let (start, end, speechRMS) = spokenPart(clean)
        var recording = Recording(samples: clean, speechStartMs: start, speechEndMs: end, noiseOnly: nil)
        guard let noise else { return recording }

        let duration = seconds(clean.count * 1000 / sampleRate)
        // -R: the same noise every run.
        try Spawn.run("sox", package: "sox", ["-R", "-n"] + rawFormat + [path("noise.raw"), "synth", duration, noise.rawValue])
        let gain = speechRMS / rms(try read(path("noise.raw"))) / pow(10, snrDB / 20)
        try Spawn.run("sox", package: "sox", ["-R", "-v", String(gain)] + rawFormat + [path("noise.raw")] + rawFormat + [path("quiet.raw")])
        try Spawn.run("sox", package: "sox", ["-R", "-m", "-v", "1"] + rawFormat + [path("clean.raw"), "-v", String(gain)]
            + rawFormat + [path("noise.raw")] + rawFormat + [path("mixed.raw")])
        recording.samples = try read(path("mixed.raw"))
        recording.noiseOnly = try read(path("quiet.raw"))
        return recording
    }

    /// Where the speech is: 10 ms windows within 40 dB of the loudest one, and their RMS.
    public static func spokenPart(_ samples: [Int16]) -> (startMs: Int, endMs: Int, rms: Double) {
        let window = sampleRate / 100
        let levels = stride(from: 0, to: samples.count - window + 1, by: window).map { rms(samples[$0..<$0 + window]) }
        let loudest = levels.max() ?? 0
        let active = levels.indices.filter { levels[$0] >= loudest / 100 }
        let energy = active.map { levels[$0] * levels[$0] }.reduce(0, +)
        return ((active.first ?? 0) * 10, ((active.last ?? 0) + 1) * 10, (energy / Double(max(active.count, 1))).squareRoot())
    }

    public static func rms<C: Collection<Int16>>(_ samples: C) -> Double {
        let energy = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
        return (energy / Double(max(samples.count, 1))).squareRoot()
    }

    public static func seconds(_ ms: Int) -> String { String(Double(ms) / 1000) }

    public static func read(_ path: String) throws -> [Int16] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.withUnsafeBytes { bytes in
            (0..<bytes.count / 2).map { Int16(littleEndian: bytes.loadUnaligned(fromByteOffset: 2 * $0, as: Int16.self)) }
        }
    }
}
