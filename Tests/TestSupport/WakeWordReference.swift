// What the local wake word's reference, pymicro-features and pymicro-wakeword in
// the test venv (Tests/Fixtures/wakeword_reference.py), makes of a recording: the
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
        return try run("features", samples, [], as: Answer.self).features
    }

    /// pymicro-wakeword's probabilities and decision for each of `models` (built-in names).
    public static func detect(_ samples: [Int16], models: [String]) throws -> [String: Decision] {
        try run("detect", samples, models, as: [String: Decision].self)
    }

    private static func run<T: Decodable>(_ command: String, _ samples: [Int16], _ extra: [String], as: T.Type) throws -> T {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw Spawn.Failure(description: "no test venv python at \(python): run scripts/test-venv")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wakeword-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let clip = directory.appendingPathComponent("clip.raw")
        let out = directory.appendingPathComponent("out.json")
        try samples.withUnsafeBufferPointer { Data(buffer: $0) }.write(to: clip)
        let script = root.appendingPathComponent("Tests/Fixtures/wakeword_reference.py").path
        // env finds nothing here: it runs the venv's python by its path, which Spawn cannot take.
        try Spawn.run("env", package: "coreutils", [python, script, command, clip.path, out.path] + extra)
        return try JSONDecoder().decode(T.self, from: Data(contentsOf: out))
    }
}
