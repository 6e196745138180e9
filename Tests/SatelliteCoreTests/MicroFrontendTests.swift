// The satellite's own microWakeWord front end against the one the models were
// trained with: pymicro-features (TensorFlow Lite's microfrontend in C) on the same
// audio, feature for feature. Real speech from espeak-ng, real noise from sox, and
// the edges integer code gets wrong first: silence, clipping, DC, full scale.
import Foundation
import Testing
import TestSupport
@testable import ControlCore
@testable import SatelliteCore

enum FrontendClip: String, CaseIterable, Sendable {
    case speech, speechInNoise, silence, whiteNoise, pinkNoise, clipped, dc, speechOnDC, fullScale, lowestValue

    func samples() throws -> [Int16] {
        switch self {
        case .speech: return try Speech.recording("okay nabu, what is the weather like", trailingMs: 500).samples
        case .speechInNoise:
            return try Speech.recording("hey mycroft", trailingMs: 500, noise: .white, snrDB: 5).samples
        case .silence: return [Int16](repeating: 0, count: 16_000)
        case .whiteNoise: return try Self.sox(["synth", "1.5", "whitenoise", "vol", "0.5"])
        case .pinkNoise: return try Self.sox(["synth", "1.5", "pinknoise", "vol", "0.2"])
        case .clipped:
            // Sixteen times too loud: most of it pinned at the rails.
            return try Speech.recording("alexa", trailingMs: 300).samples.map { Int16(clamping: Int($0) * 16) }
        case .dc: return [Int16](repeating: 12_000, count: 16_000)
        case .speechOnDC:
            return try Speech.recording("alexa", trailingMs: 300).samples.map { Int16(clamping: Int($0) + 9_000) }
        case .fullScale: return (0..<16_000).map { $0 % 2 == 0 ? Int16.max : Int16.min }
        case .lowestValue: return [Int16](repeating: Int16.min, count: 8_000) + [Int16](repeating: 0, count: 8_000)
        }
    }

    private static func sox(_ effect: [String]) throws -> [Int16] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("noise-\(UUID().uuidString).raw").path
        defer { unlink(path) }
        try Spawn.run("sox", package: "sox", ["-R", "-n"] + Speech.rawFormat + [path] + effect)
        return try Speech.read(path)
    }
}

@Suite(.offThePool) struct MicroFrontendTests {
    @Test(arguments: FrontendClip.allCases)
    func featuresEqualPymicroFeatures(_ clip: FrontendClip) throws {
        let samples = try clip.samples()
        let reference = try WakeWordReference.features(samples)
        var frontend = MicroFrontend()
        let ours = frontend.process(samples)

        #expect(ours.count == reference.count, "\(clip): \(ours.count) frames, pymicro-features made \(reference.count)")
        #expect(ours.count == (samples.count - MicroFrontend.windowSamples) / MicroFrontend.stepSamples + 1)
        var differing: [String] = []
        var exact = 0
        for (index, (mine, theirs)) in zip(ours, reference).enumerated() {
            #expect(mine.count == MicroFrontend.channelCount)
            for channel in 0..<min(mine.count, theirs.count) {
                let difference = abs(Int(mine[channel]) - theirs[channel])
                if difference == 0 { exact += 1 }
                if difference > 1 { differing.append("frame \(index) channel \(channel): \(mine[channel]) vs \(theirs[channel])") }
            }
        }
        // Within one quantisation step everywhere (the brief's bound); exactness is what was measured.
        #expect(differing.isEmpty, "\(clip): \(differing.count) features differ by more than one step: \(differing.prefix(5))")
        print("MicroFrontend \(clip): \(exact) of \(ours.count * MicroFrontend.channelCount) features exactly equal")
    }

    @Test func speechGivesFeaturesThatVary() throws {
        var frontend = MicroFrontend()
        let frames = frontend.process(try FrontendClip.speech.samples())
        let values = Set(frames.joined())
        // A front end that returned zeros would pass a comparison on silence alone.
        #expect(values.count > 100)
        #expect((values.max() ?? 0) > 400)
    }

    @Test func chunkingDoesNotChangeTheFeatures() throws {
        let samples = try FrontendClip.speechInNoise.samples()
        var whole = MicroFrontend()
        let once = whole.process(samples)
        var pieces = MicroFrontend()
        var chunked: [[UInt16]] = []
        var start = 0
        var size = 1
        while start < samples.count {
            let end = min(start + size, samples.count)
            chunked += pieces.process(samples[start..<end])
            start = end
            size = size * 3 % 997 + 1
        }
        #expect(chunked == once)
    }

    @Test func aWindowNeedsThirtyMillisecondsThenEachFrameTen() {
        var frontend = MicroFrontend()
        #expect(frontend.process([Int16](repeating: 0, count: 479)).isEmpty)
        #expect(frontend.process([0]).count == 1)
        #expect(frontend.process([Int16](repeating: 0, count: 159)).isEmpty)
        #expect(frontend.process([0]).count == 1)
        #expect(frontend.process([Int16](repeating: 0, count: 320)).count == 2)
    }
}
