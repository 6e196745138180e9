// Where the local wake word's engine is: a folder holding TensorFlow Lite's C
// library (lib/libtensorflowlite_c.so) and the shipped microWakeWord models
// (models/NAME.json, each with its .tflite), as scripts/deps lays out
// .build/wakeword and the package installs /usr/lib/parlour-satellite. A source
// tree's daemon finds the build folder beside its own build configuration;
// PARLOUR_SATELLITE_WAKEWORD names another folder (the tests use it).

/// The folder of the wake word engine, resolved once at start.
public struct WakeWordFolder: Sendable, Equatable {
    /// The models the package ships, by the names `wakeWord.model` takes.
    public static let shippedModels = ["okay_nabu", "hey_jarvis", "alexa", "hey_mycroft"]
    public static let installed = "/usr/lib/parlour-satellite"
    public static let environmentKey = "PARLOUR_SATELLITE_WAKEWORD"

    public var path: String

    public init(path: String) { self.path = path }

    public var library: String { SatellitePaths.joined(path, "lib/libtensorflowlite_c.so") }

    /// The manifest `wakeWord.model` means: a shipped model's in this folder, or the path itself.
    public func manifest(for model: String) -> String {
        model.hasPrefix("/") ? model : SatellitePaths.joined(path, "models/\(model).json")
    }

    /// The folder named by the environment; else a build folder's `wakeword` beside the running
    /// `executable` (…/.build/debug/parlour-satellite or …/.build/<triple>/debug/parlour-satellite) when
    /// it holds the library; else the installed one.
    public static func resolve(environment: [String: String], executable: String?,
                               exists: (String) -> Bool) -> WakeWordFolder {
        if let named = environment[environmentKey], !named.isEmpty { return WakeWordFolder(path: named) }
        if let executable {
            var folder = SatellitePaths.folder(of: executable)
            for _ in 0..<2 {
                folder = SatellitePaths.folder(of: folder)
                guard !folder.isEmpty, folder != "/" else { break }
                let candidate = WakeWordFolder(path: SatellitePaths.joined(folder, "wakeword"))
                if exists(candidate.library) { return candidate }
            }
        }
        return WakeWordFolder(path: installed)
    }
}
