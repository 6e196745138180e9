// A microWakeWord model's manifest: the JSON beside each .tflite that names the
// model file, the wake word and how to read the model's output (its cutoff and how
// many probabilities to average). The shipped four and any other microWakeWord
// model (version 2, as ESPHome and linux-voice-assistant take them) read the same.

public struct WakeWordManifest: Sendable, Equatable {
    /// What the model listens for, as people write it ("Okay Nabu").
    public var wakeWord: String
    /// The .tflite file, as the manifest names it (relative to the manifest's folder unless absolute).
    public var model: String
    /// Above this averaged probability the word was said.
    public var probabilityCutoff: Double
    /// How many of the model's successive probabilities are averaged.
    public var slidingWindowSize: Int
    /// Milliseconds between feature frames the model was trained on.
    public var featureStepSize: Int
    public var trainedLanguages: [String]

    /// The only step the front end (MicroFrontend) makes.
    public static let supportedFeatureStep = MicroFrontend.stepSamples * 1000 / MicroFrontend.sampleRate

    /// Reads the manifest at `file` (named in errors) from its text.
    public static func parse(_ data: [UInt8], file: String) throws(WakeWordManifestError) -> WakeWordManifest {
        func fail(_ key: String, _ expected: String, _ found: JSONValue?) -> WakeWordManifestError {
            WakeWordManifestError(file: file, key: key, expected: expected, found: found.map(Self.describe) ?? "nothing")
        }
        let document: JSONValue
        do {
            document = try JSONValue.parse(data)
        } catch {
            throw WakeWordManifestError(file: file, key: nil, expected: "a microWakeWord manifest (JSON)",
                                        found: error.description)
        }
        guard document.objectValue != nil else { throw fail("", "an object", document) }
        guard document["type"]?.stringValue == "micro" else {
            throw fail("type", "\"micro\" (a microWakeWord model; openWakeWord and others are not supported)", document["type"])
        }
        guard document["version"]?.intValue == 2 else {
            throw fail("version", "2 (the streaming models ESPHome 2024.7 and later take)", document["version"])
        }
        guard let wakeWord = document["wake_word"]?.stringValue, !wakeWord.isEmpty else {
            throw fail("wake_word", "the wake word as text", document["wake_word"])
        }
        guard let model = document["model"]?.stringValue, model.hasSuffix(".tflite") else {
            throw fail("model", "the model's file name, ending .tflite", document["model"])
        }
        guard let micro = document["micro"], micro.objectValue != nil else {
            throw fail("micro", "an object with probability_cutoff, sliding_window_size and feature_step_size", document["micro"])
        }
        guard let cutoff = micro["probability_cutoff"]?.numberValue, cutoff > 0, cutoff < 1 else {
            throw fail("micro.probability_cutoff", "a number between 0 and 1", micro["probability_cutoff"])
        }
        guard let window = micro["sliding_window_size"]?.intValue, (1...100).contains(window) else {
            throw fail("micro.sliding_window_size", "a whole number from 1 to 100", micro["sliding_window_size"])
        }
        guard let step = micro["feature_step_size"]?.intValue, step == supportedFeatureStep else {
            throw fail("micro.feature_step_size", "\(supportedFeatureStep) (the front end makes a feature frame each \(supportedFeatureStep) ms)",
                       micro["feature_step_size"])
        }
        let languages = document["trained_languages"]?.arrayValue?.compactMap(\.stringValue) ?? []
        return WakeWordManifest(wakeWord: wakeWord, model: model, probabilityCutoff: cutoff, slidingWindowSize: window,
                                featureStepSize: step, trainedLanguages: languages)
    }

    /// The model file's path for a manifest read from `manifestPath`.
    public func modelPath(manifestPath: String) -> String {
        if model.hasPrefix("/") { return model }
        guard let slash = manifestPath.lastIndex(of: "/") else { return model }
        return String(manifestPath[...slash]) + model
    }

    private static func describe(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): "\"\(text)\""
        case .number(let number): number.rounded() == number && abs(number) < 1e15 ? String(Int(number)) : String(number)
        default: value.kindName
        }
    }
}

/// A manifest that is not what a microWakeWord model's must be: which file, which key, what it must hold.
public struct WakeWordManifestError: Error, Equatable, CustomStringConvertible {
    public let file: String
    /// The key, dotted for nested ones ("micro.probability_cutoff"); nil when the file is not JSON at all.
    public let key: String?
    public let expected: String
    public let found: String

    public var description: String {
        guard let key else { return "\(file) is not \(expected): \(found)" }
        let place = key.isEmpty ? "the top level" : "\"\(key)\""
        return "\(file): \(place) must be \(expected), not \(found)"
    }
}
