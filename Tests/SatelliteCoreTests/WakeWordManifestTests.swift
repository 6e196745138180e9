// microWakeWord manifests: the four pymicro-wakeword ships (fetched by scripts/deps)
// read as they are, and each way a manifest can be wrong is named by file and key
// with what the key must hold.
import Foundation
import Testing
import TestSupport
@testable import ControlCore
@testable import SatelliteCore

@Suite(.offThePool) struct WakeWordManifestTests {
    static let shipped: [(name: String, wakeWord: String, cutoff: Double)] = [
        ("okay_nabu", "Okay Nabu", 0.85), ("hey_jarvis", "Hey Jarvis", 0.97),
        ("alexa", "Alexa", 0.9), ("hey_mycroft", "Hey Mycroft", 0.95),
    ]

    @Test func theShippedManifestsRead() throws {
        for model in Self.shipped {
            let path = WakeWordReference.root.appendingPathComponent(".build/wakeword/models/\(model.name).json").path
            guard let data = try? FileSystem.read(path) else {
                Issue.record("no \(path): run scripts/deps, which fetches the models")
                continue
            }
            let manifest = try WakeWordManifest.parse(data, file: path)
            #expect(manifest.wakeWord == model.wakeWord)
            #expect(manifest.probabilityCutoff == model.cutoff)
            #expect(manifest.slidingWindowSize == 5)
            #expect(manifest.featureStepSize == 10)
            #expect(manifest.modelPath(manifestPath: path) == path.replacingOccurrences(of: ".json", with: ".tflite"))
        }
    }

    static let good: JSONValue = [
        "type": "micro", "wake_word": "Hey Parlour", "model": "hey_parlour.tflite", "version": 2,
        "trained_languages": ["en"],
        "micro": ["probability_cutoff": 0.8, "sliding_window_size": 3, "feature_step_size": 10],
    ]

    static func replacing(_ key: String, with value: JSONValue?) -> JSONValue {
        guard case .object(var top) = good else { return good }
        let parts = key.split(separator: ".").map(String.init)
        if parts.count == 2, case .object(var micro)? = top[parts[0]] {
            micro[parts[1]] = value
            top[parts[0]] = .object(micro)
        } else {
            top[key] = value
        }
        return .object(top)
    }

    @Test func aGoodManifestReads() throws {
        let manifest = try WakeWordManifest.parse(Array(Self.good.text.utf8), file: "/models/hey_parlour.json")
        #expect(manifest == WakeWordManifest(wakeWord: "Hey Parlour", model: "hey_parlour.tflite", probabilityCutoff: 0.8,
                                             slidingWindowSize: 3, featureStepSize: 10, trainedLanguages: ["en"]))
        #expect(manifest.modelPath(manifestPath: "/models/hey_parlour.json") == "/models/hey_parlour.tflite")
    }

    @Test(arguments: [
        ("type", JSONValue.string("openwakeword"), "\"micro\"", "\"openwakeword\""),
        ("type", nil, "\"micro\"", "nothing"),
        ("version", 1, "2", "1"),
        ("wake_word", 7, "the wake word as text", "7"),
        ("model", "hey_parlour.onnx", "ending .tflite", "\"hey_parlour.onnx\""),
        ("model", nil, "ending .tflite", "nothing"),
        ("micro", "fast", "an object", "\"fast\""),
        ("micro.probability_cutoff", 1.5, "between 0 and 1", "1.5"),
        ("micro.probability_cutoff", "high", "between 0 and 1", "\"high\""),
        ("micro.sliding_window_size", 0, "from 1 to 100", "0"),
        ("micro.sliding_window_size", 2.5, "from 1 to 100", "2.5"),
        ("micro.feature_step_size", 20, "10", "20"),
        ("micro.feature_step_size", nil, "10", "nothing"),
    ] as [(String, JSONValue?, String, String)])
    func aWrongKeyIsNamed(key: String, value: JSONValue?, expected: String, found: String) throws {
        let text = Self.replacing(key, with: value).text
        #expect {
            _ = try WakeWordManifest.parse(Array(text.utf8), file: "/models/x.json")
        } throws: { error in
            guard let error = error as? WakeWordManifestError else { return false }
            let said = error.description
            return error.file == "/models/x.json" && error.key == key && error.expected.contains(expected) && error.found == found
                && said.contains("/models/x.json") && said.contains("\"\(key)\"") && said.contains(found)
        }
    }

    @Test func textThatIsNotJSONIsNamedAsSuch() {
        #expect {
            _ = try WakeWordManifest.parse(Array("model: okay_nabu.tflite".utf8), file: "/m/okay.json")
        } throws: { error in
            let error = error as? WakeWordManifestError
            return error?.key == nil && error?.description.hasPrefix("/m/okay.json is not a microWakeWord manifest") == true
        }
        #expect(throws: WakeWordManifestError.self) { _ = try WakeWordManifest.parse(Array("[1]".utf8), file: "/m/okay.json") }
    }

    @Test func anAbsoluteModelPathIsKept() throws {
        let text = Self.replacing("model", with: "/srv/models/hey.tflite").text
        let manifest = try WakeWordManifest.parse(Array(text.utf8), file: "/etc/parlour/hey.json")
        #expect(manifest.modelPath(manifestPath: "/etc/parlour/hey.json") == "/srv/models/hey.tflite")
    }
}

@Suite struct WakeWordWindowTests {
    @Test func theAverageCountsOnlyOnceTheWindowIsFull() {
        var window = WakeWordWindow(size: 3, cutoff: 0.5)
        #expect(window.add(1) == 0)
        #expect(window.add(1) == 0)
        #expect(window.add(1) == 1)
        #expect(window.add(0.25) == 0.75)
        #expect(window.add(0) == 1.25 / 3)
        window.reset()
        #expect(window.add(1) == 0)
    }

    @Test func onlyAnAverageAboveTheCutoffWakes() {
        let window = WakeWordWindow(size: 5, cutoff: 0.85)
        #expect(window.heard(0.9))
        #expect(!window.heard(0.85))
        #expect(!window.heard(0.2))
    }

    @Test func quantisationFollowsTheTensorsParameters() {
        // The shipped models' input: int8, scale 26/255, zero point -128; output: uint8, 1/256, 0.
        let input = WakeWordTensorQuantisation(kind: .int8, scale: 0.10196078568696976, zeroPoint: -128)
        #expect(input.quantise(feature: 0) == UInt8(bitPattern: -128))
        #expect(input.quantise(feature: 400) == UInt8(bitPattern: Int8(25)))  // 15.625 / 0.10196 - 128 = 25.24
        #expect(input.quantise(feature: 666) == 127)
        #expect(input.quantise(feature: 2000) == 127)  // saturates
        let output = WakeWordTensorQuantisation(kind: .uint8, scale: 0.00390625, zeroPoint: 0)
        #expect(output.dequantise(255) == 0.99609375)
        #expect(output.dequantise(0) == 0)
        let signed = WakeWordTensorQuantisation(kind: .int8, scale: 0.5, zeroPoint: -2)
        #expect(signed.dequantise(UInt8(bitPattern: -4)) == -1)
        #expect(signed.quantise(feature: 0) == UInt8(bitPattern: -2))
    }
}
