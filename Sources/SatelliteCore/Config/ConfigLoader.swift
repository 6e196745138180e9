// Reads satellite.json into a SatelliteConfig, or says exactly what is wrong
// with it. Wrong values stop the daemon (an error naming file, key and what
// was expected); unknown keys only warn, so a file written for a newer version
// still starts. A missing default file is fine, a missing named file is not.

import Glibc

/// A config that passed, with the warnings to log about it.
public struct LoadedConfig: Sendable, Equatable {
    public var config: SatelliteConfig
    /// Sentences naming the file and what was ignored, such as an unknown key.
    public var warnings: [String]

    public init(config: SatelliteConfig, warnings: [String]) {
        self.config = config
        self.warnings = warnings
    }
}

/// Turns satellite.json into a checked SatelliteConfig.
public enum ConfigLoader {
    /// Reads the file at `path`. When it does not exist, that is an error if the path was
    /// `explicit` (`--config` or `PARLOUR_SATELLITE_CONFIG`), and all defaults with a warning if not.
    public static func load(path: String, explicit: Bool, hostName: String) throws(ConfigError) -> LoadedConfig {
        var info = stat()
        let exists = stat(path, &info) == 0
        if exists && info.st_mode & S_IFMT == S_IFDIR {
            throw ConfigError(file: path, keyPath: nil, message: "it is a folder, not a file; name the satellite.json inside it")
        }
        if !exists {
            guard !explicit else {
                throw ConfigError(file: path, keyPath: nil, message:
                    "the file does not exist; write {} to it for all defaults, or point --config or"
                    + " PARLOUR_SATELLITE_CONFIG at the right file")
            }
            return LoadedConfig(config: .defaults(hostName: hostName), warnings: [
                "\(path): the file does not exist, so every setting is at its default;"
                + " copy config/satellite.json there to change them.",
            ])
        }
        let data: [UInt8]
        do {
            data = try FileSystem.read(path)
        } catch {
            throw ConfigError(file: path, keyPath: nil, message:
                "it cannot be read (\(error.fileReason)); make it readable by the user the daemon runs as")
        }
        return try decode(data, file: path, hostName: hostName)
    }

    /// Checks the text of a config file; `file` is only used to name it in errors and warnings.
    public static func decode(_ data: [UInt8], file: String, hostName: String) throws(ConfigError) -> LoadedConfig {
        if data.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
            throw ConfigError(file: file, keyPath: nil, message: "the file is empty; write {} for all defaults")
        }
        let root: JSONValue
        do {
            root = try JSONValue.parse(data)
        } catch {
            throw ConfigError(file: file, keyPath: nil, message: error.description)
        }
        guard let fields = root.objectValue else {
            throw ConfigError(file: file, keyPath: nil,
                              message: "expected a JSON object such as {}, found \(Rejection.describe(root))")
        }
        var config = SatelliteConfig.defaults(hostName: hostName)
        var warnings: [String] = []
        try read(fields, under: "", into: &config, warnings: &warnings, file: file)
        for rule in ConfigKey.rules {
            do {
                try rule.check(config)
            } catch {
                let value = ConfigKey.byPath[rule.path]?.render(config) ?? .null
                throw ConfigError(file: file, keyPath: rule.path, message: error.message(for: value))
            }
        }
        return LoadedConfig(config: config, warnings: warnings)
    }

    /// Walks one object of the file against the key table, in key order so that the same file
    /// always gives the same first error.
    private static func read(_ fields: [String: JSONValue], under object: String, into config: inout SatelliteConfig,
                             warnings: inout [String], file: String) throws(ConfigError) {
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            let path = object.isEmpty ? key : "\(object).\(key)"
            if let spec = ConfigKey.byPath[path] {
                do {
                    try spec.read(value, &config)
                } catch {
                    throw ConfigError(file: file, keyPath: path, message: error.message(for: value))
                }
            } else if let children = ConfigKey.children(of: path) {
                guard let inner = value.objectValue else {
                    let expected = "an object with the keys " + children.joined(separator: ", ")
                    throw ConfigError(file: file, keyPath: path, message: Rejection(expected).message(for: value))
                }
                try read(inner, under: path, into: &config, warnings: &warnings, file: file)
            } else {
                warnings.append(unknownKeyWarning(path, file: file))
            }
        }
    }

    private static func unknownKeyWarning(_ path: String, file: String) -> String {
        let leaf = path.split(separator: ".").last.map(String.init) ?? path
        // A near miss at the same place, else the same key put at the wrong level ("silenceMs" at the top).
        let guess = Suggestion.closest(to: path, among: ConfigKey.knownPaths)
            ?? ConfigKey.knownPaths.first { $0.split(separator: ".").last?.lowercased() == leaf.lowercased() }
        let sentence = "\(file): unknown key \"\(path)\" is ignored"
        return guess.map { "\(sentence); did you mean \"\($0)\"?" } ?? "\(sentence)."
    }
}
