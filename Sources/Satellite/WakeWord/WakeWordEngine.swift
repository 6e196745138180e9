// The local wake word's ear: MicroFrontend's features fed to one microWakeWord
// model, loaded at start from what the config names (`wakeWord.model`,
// `wakeWord.cutoff`) and the wake word folder. Whatever is wrong with the
// library or the model stops the start (exit 78), naming the config file, the
// key and then the file and what was expected of it.
import SatelliteCore

/// Not for sharing: handed once to WakeWordService, whose ears (WakeWordEar) alone feed it, in order, on the audio thread.
public final class WakeWordEngine: @unchecked Sendable {
    /// As `wakeWord.model` names it.
    public let name: String
    public let model: WakeWordModel
    private var frontend = MicroFrontend()

    init(name: String, model: WakeWordModel) {
        self.name = name
        self.model = model
    }

    /// Loads the library and the model; `configFile` is named in errors.
    public static func load(_ settings: SatelliteConfig.WakeWord, folder: WakeWordFolder,
                            configFile: String) throws(ConfigError) -> WakeWordEngine {
        let library: TFLiteLibrary
        do {
            library = try TFLiteLibrary(path: folder.library)
        } catch {
            throw ConfigError(file: configFile, keyPath: "wake", message: "\"local\" needs \(error.description)")
        }
        do {
            let model = try WakeWordModel(manifestPath: folder.manifest(for: settings.model), library: library,
                                          cutoff: settings.cutoff)
            return WakeWordEngine(name: settings.model, model: model)
        } catch {
            throw ConfigError(file: configFile, keyPath: "wakeWord.model", message: "expected a microWakeWord model, but \(error)")
        }
    }

    /// A wake: the averaged probability, and how far into the samples heard the frame that
    /// decided it ends (what follows is the question).
    public struct Wake: Sendable, Equatable {
        public let probability: Double
        public let end: Int
    }

    /// Hears `samples` (16 kHz mono): the wake they hold, or nil.
    public func hear(_ samples: [Int16]) throws(WakeWordModelError) -> Wake? {
        let firstEnd = MicroFrontend.windowSamples - frontend.bufferedSamples
        var woke: Wake?
        for (index, frame) in frontend.process(samples).enumerated() {
            if let average = try model.process(frame), woke == nil, model.heard(average) {
                woke = Wake(probability: average, end: firstEnd + index * MicroFrontend.stepSamples)
            }
        }
        return woke
    }

    /// Starts the model afresh after a wake (the front end's noise estimate is kept).
    public func reset() throws(WakeWordModelError) { try model.reset() }
}
