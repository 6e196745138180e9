// The local wake word's engine: TensorFlow Lite's C library as pymicro-wakeword
// ships it (fetched into .build/wakeword by scripts/deps), dlopened, running the
// shipped microWakeWord models on MicroFrontend's features. Checked against the
// reference (pymicro-wakeword with pymicro-features, in the test venv) on an
// espeak-ng corpus in several voices and speeds with sox noise; and each way the
// library or a model can be wrong names the file and what was expected.
import Foundation
import Testing
import TestSupport
@testable import Satellite
@testable import SatelliteCore

enum WakeWordFiles {
    static let directory = Package.root.appendingPathComponent(".build/wakeword")
    static var library: String { directory.appendingPathComponent("lib/libtensorflowlite_c.so").path }
    static func manifest(_ name: String) -> String { directory.appendingPathComponent("models/\(name).json").path }

    static func openLibrary() throws -> TFLiteLibrary {
        guard FileManager.default.fileExists(atPath: library) else {
            throw TestFailure("no \(library): run scripts/deps, which fetches TensorFlow Lite's C library and the models")
        }
        return try TFLiteLibrary(path: library)
    }
}

@Suite(.offThePool) struct WakeWordModelTests {
    @Test func theShippedModelsLoadWithTheTensorsTheFrontEndFeeds() throws {
        let library = try WakeWordFiles.openLibrary()
        #expect(library.versionText.hasPrefix("2."))
        for name in ["okay_nabu", "hey_jarvis", "alexa", "hey_mycroft"] {
            let model = try WakeWordModel(manifestPath: WakeWordFiles.manifest(name), library: library)
            #expect(model.stride == 3)
            #expect(model.inputQuantisation.kind == .int8)
            #expect(model.outputQuantisation.kind == .uint8)
            #expect(model.window.size == model.manifest.slidingWindowSize)
        }
        let overridden = try WakeWordModel(manifestPath: WakeWordFiles.manifest("alexa"), library: library, cutoff: 0.5)
        #expect(overridden.window.cutoff == 0.5)
    }

    @Test func aResetModelHearsAClipAsAFreshOneDoes() throws {
        let library = try WakeWordFiles.openLibrary()
        let samples = try Speech.recording("okay nabu", leadingMs: 500, trailingMs: 1_000).samples
        let model = try WakeWordModel(manifestPath: WakeWordFiles.manifest("okay_nabu"), library: library)
        func hear() throws -> [Double] {
            var frontend = MicroFrontend()
            return try frontend.process(samples).compactMap { try model.process($0) }
        }
        let first = try hear()
        #expect(first.contains(where: model.heard), "the clip wakes the model")
        // Without a reset the model carries what it heard into the next clip.
        let carried = try hear()
        try model.reset()
        #expect(try hear() == first)
        #expect(carried != first)
    }

    @Test func aLibraryThatCannotBeLoadedIsNamed() throws {
        let directory = try Package.temporaryDirectory("tflite")
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = directory.appendingPathComponent("libtensorflowlite_c.so").path
        let text = directory.appendingPathComponent("not-a-library.so").path
        try Data("hello".utf8).write(to: URL(fileURLWithPath: text))
        for path in [missing, text] {
            #expect {
                _ = try TFLiteLibrary(path: path)
            } throws: { error in
                let said = "\(error)"
                return (error as? TFLiteLibraryError)?.path == path && said.contains(path) && said.contains("cannot be loaded")
                    && said.contains("scripts/deps")
            }
        }
        // A real shared library that is not TensorFlow Lite's.
        let libm = "/lib/x86_64-linux-gnu/libm.so.6"
        if FileManager.default.fileExists(atPath: libm) {
            #expect {
                _ = try TFLiteLibrary(path: libm)
            } throws: { error in "\(error)".contains("\(libm) has no TfLiteVersion") }
        }
    }

    @Test func aModelThatCannotBeUsedNamesTheFileAndWhatWasExpected() throws {
        let library = try WakeWordFiles.openLibrary()
        let directory = try Package.temporaryDirectory("wakeword-models")
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        func manifest(model: String, cutoff: Double = 0.8) -> Data {
            Data(#"{"type": "micro", "wake_word": "Hey", "model": "\#(model)", "version": 2, "micro": {"probability_cutoff": \#(cutoff), "sliding_window_size": 5, "feature_step_size": 10}}"#.utf8)
        }
        try manifest(model: "absent.tflite").write(to: URL(fileURLWithPath: path("absent.json")))
        try manifest(model: "garbage.tflite").write(to: URL(fileURLWithPath: path("garbage.json")))
        try Data(repeating: 7, count: 4096).write(to: URL(fileURLWithPath: path("garbage.tflite")))
        try manifest(model: "x.tflite", cutoff: 2).write(to: URL(fileURLWithPath: path("cutoff.json")))
        // The shipped okay_nabu with its input's shape vector [1, 3, 40] changed to [1, 3, 32].
        var model = try Data(contentsOf: URL(fileURLWithPath: WakeWordFiles.directory.appendingPathComponent("models/okay_nabu.tflite").path))
        let shape = Data([3, 1, 3, 40].flatMap { (value: Int32) in withUnsafeBytes(of: value.littleEndian, Array.init) })
        let at = try #require(model.range(of: shape), "okay_nabu.tflite has no input shape [1, 3, 40]")
        model[at.upperBound - 4] = 32
        try model.write(to: URL(fileURLWithPath: path("narrow.tflite")))
        try manifest(model: "narrow.tflite").write(to: URL(fileURLWithPath: path("narrow.json")))

        let cases: [(manifest: String, mustSay: [String])] = [
            (path("none.json"), [path("none.json"), "cannot be read"]),
            (path("absent.json"), [path("absent.tflite"), "does not exist", "\"model\""]),
            (path("garbage.json"), [path("garbage.tflite"), "is not a TensorFlow Lite model"]),
            (path("cutoff.json"), [path("cutoff.json"), "\"micro.probability_cutoff\"", "between 0 and 1", "not 2"]),
            (path("narrow.json"), [path("narrow.tflite"), "takes input [1, 3, 32]", "expected [1, frames, 40]"]),
        ]
        for (manifestPath, mustSay) in cases {
            #expect {
                _ = try WakeWordModel(manifestPath: manifestPath, library: library)
            } throws: { error in
                let said = "\(error)"
                let missing = mustSay.filter { !said.contains($0) }
                if !missing.isEmpty { Issue.record("\(manifestPath): \"\(said)\" does not say \(missing)") }
                return missing.isEmpty
            }
        }
    }
}

/// The brief's corpus: espeak-ng saying the three wake words the shipped models hear and two
/// sentences they must not, in voices and speeds, clean and in white noise at 20, 10 and 5 dB SNR.
struct WakeWordClip: CustomStringConvertible {
    static let models = ["okay_nabu", "alexa", "hey_mycroft"]
    static let phrases = ["okay nabu", "alexa", "hey mycroft", "what is the weather like", "turn off the kitchen light"]
    static let voices: [String?] = [nil, "en-us", "en+f3"]
    static let speeds: [Int?] = [nil, 140]
    static let snrs: [Double?] = [nil, 20, 10, 5]

    let phrase: String
    let voice: String?
    let speed: Int?
    let snr: Double?
    var samples: [Int16] = []

    var description: String {
        "\"\(phrase)\" voice \(voice ?? "default") speed \(speed.map(String.init) ?? "default") " + (snr.map { "\(Int($0)) dB SNR" } ?? "clean")
    }

    static func corpus() throws -> [WakeWordClip] {
        var clips: [WakeWordClip] = []
        for phrase in phrases { for voice in voices { for speed in speeds { for snr in snrs {
            var clip = WakeWordClip(phrase: phrase, voice: voice, speed: speed, snr: snr)
            clip.samples = try Speech.recording(phrase, leadingMs: 500, trailingMs: 1_000, noise: snr == nil ? nil : .white,
                                                snrDB: snr ?? 0, voice: voice, wordsPerMinute: speed).samples
            clips.append(clip)
        } } } }
        return clips
    }
}

@Suite(.offThePool) struct WakeWordAgreementTests {
    /// The satellite's averaged probabilities, one each model step, for a clip.
    static func probabilities(_ samples: [Int16], model: WakeWordModel) throws -> [Double] {
        var frontend = MicroFrontend()
        return try frontend.process(samples).compactMap { try model.process($0) }
    }

    @Test func theSatelliteWakesOnTheClipsTheReferenceWakesOn() throws {
        let library = try WakeWordFiles.openLibrary()
        let clips = try WakeWordClip.corpus()
        let reference = try WakeWordReference.detect(clips.map(\.samples), models: WakeWordClip.models)
        try #require(reference.count == clips.count)

        var agreed = 0, allowed: [String] = [], disallowed: [String] = []
        var steps = 0, equalSteps = 0, wakes = 0
        for (clip, answers) in zip(clips, reference) {
            for name in WakeWordClip.models {
                let theirs = try #require(answers[name])
                let model = try WakeWordModel(manifestPath: WakeWordFiles.manifest(name), library: library)
                let ours = try Self.probabilities(clip.samples, model: model)
                #expect(ours.count == theirs.probabilities.count, "\(clip) \(name): \(ours.count) steps, the reference \(theirs.probabilities.count)")
                steps += theirs.probabilities.count
                equalSteps += zip(ours, theirs.probabilities).filter { $0 == $1 }.count
                let heard = ours.contains(where: model.heard)
                if theirs.detected { wakes += 1 }
                let ourPeak = ours.max() ?? 0, theirPeak = theirs.probabilities.max() ?? 0
                let line = "\(clip) \(name): satellite \(heard ? "wakes" : "does not") (peak \(ourPeak)), "
                    + "reference \(theirs.detected ? "wakes" : "does not") (peak \(theirPeak)), cutoff \(theirs.cutoff)"
                if heard == theirs.detected {
                    agreed += 1
                } else if abs(ourPeak - theirs.cutoff) <= 0.05 && abs(theirPeak - theirs.cutoff) <= 0.05 {
                    allowed.append(line)
                } else {
                    disallowed.append(line)
                }
            }
        }
        print("Wake word agreement: \(agreed) of \(clips.count * WakeWordClip.models.count) decisions alike "
            + "(the reference woke \(wakes) times); \(equalSteps) of \(steps) probabilities equal")
        for line in allowed { print("  disagreement within 0.05 of the cutoff: \(line)") }
        #expect(disallowed.isEmpty, "decisions unlike the reference's: \(disallowed.joined(separator: "; "))")
        // The corpus must hold wakes and non-wakes, or agreement says nothing.
        #expect(wakes >= clips.count / 10)
        #expect(wakes < clips.count * WakeWordClip.models.count / 2)
    }

    @Test func eachWordWakesItsOwnModelAndNoOther() throws {
        let library = try WakeWordFiles.openLibrary()
        for (phrase, owner) in [("okay nabu", "okay_nabu"), ("alexa", "alexa"), ("hey mycroft", "hey_mycroft"),
                                ("what is the weather like", nil)] as [(String, String?)] {
            let samples = try Speech.recording(phrase, leadingMs: 500, trailingMs: 1_000).samples
            for name in WakeWordClip.models {
                let model = try WakeWordModel(manifestPath: WakeWordFiles.manifest(name), library: library)
                let heard = try Self.probabilities(samples, model: model).contains(where: model.heard)
                #expect(heard == (name == owner), "\"\(phrase)\" with \(name): \(heard ? "woke" : "did not wake")")
            }
        }
    }
}
