// What the local wake word's reference, pymicro-features and pymicro-wakeword in
// the test venv (Tests/Fixtures/wakeword_reference.py), makes of recordings: the
// front end's features and each model's probabilities, for the satellite's own to
// be compared with. The venv comes from scripts/test-venv; without it the test fails
// saying so.
import Foundation

public enum WakeWordReference {
    /// One model's answer on a clip: an averaged probability each model step (every 30 ms).
    public struct Decision: Decodable, Sendable {
        public let probabilities: [Double]
        public let detected: Bool
        public let cutoff: Double
    }

    public static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var python: String {
        ProcessInfo.processInfo.environment["PARLOUR_TEST_PYTHON"] ?? root.appendingPathComponent(".build/test-venv/bin/python").path
    }

    /// pymicro-features' frames for `samples` (16 kHz), in the front end's own units.
    public static func features(_ samples: [Int16]) throws -> [[Int]] {
        struct Answer: Decodable { let features: [[Int]] }
        return try run(Answer.self) { directory, out in
            ["features", try write(samples, in: directory, as: "clip.raw"), out]
        }.features
    }

    /// pymicro-wakeword's probabilities and decision for each of `models` (built-in names) on each clip,
    /// in one run of the reference (its start, with numpy and TensorFlow Lite, takes most of a second).
    public static func detect(_ clips: [[Int16]], models: [String]) throws -> [[String: Decision]] {
        struct Answer: Decodable { let clips: [[String: Decision]] }
        return try run(Answer.self) { directory, out in
            ["detect", out, models.joined(separator: ",")]
                + (try clips.enumerated().map { try write($1, in: directory, as: "clip\($0).raw") })
        }.clips
    }

    private static func write(_ samples: [Int16], in directory: URL, as name: String) throws -> String {
        let url = directory.appendingPathComponent(name)
        try samples.withUnsafeBufferPointer { Data(buffer: $0) }.write(to: url)
        return url.path
    }

    /// Runs the script with the arguments `arguments` gives for a scratch folder and the answer's
    /// path in it, then decodes the answer.
    private static func run<T: Decodable>(_: T.Type, _ arguments: (URL, String) throws -> [String]) throws -> T {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw Spawn.Failure(description: "no test venv python at \(python): run scripts/test-venv")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wakeword-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("out.json").path
        let script = root.appendingPathComponent("Tests/Fixtures/wakeword_reference.py").path
        // env finds nothing here: it runs the venv's python by its path, which Spawn cannot take.
        try Spawn.run("env", package: "coreutils", [python, script] + (try arguments(directory, out)))
        return try JSONDecoder().decode(T.self, from: Data(contentsOf: URL(fileURLWithPath: out)))
    }
}
