// Writes and clears <state>/token, for pairing and `parlourctl token set` /
// `token clear`. Easy to get wrong: the file is 0600 from the moment it exists,
// it holds the token alone (and a newline), and no error message may quote it.
// Reading is TokenStore's job.
import SatelliteCore

/// The token file in the state folder.
public enum TokenFile {
    /// The token file's path in `stateDirectory`.
    public static func path(stateDirectory: String) -> String {
        SatellitePaths.joined(stateDirectory, "token")
    }

    /// Replaces the token with `token` (trimmed), mode 0600, atomically; creates the folder (0700) if need be.
    public static func write(_ token: String, stateDirectory: String) throws(SatelliteError) {
        let clean = token.trimmed()
        guard !clean.isEmpty else {
            throw SatelliteError(.invalidRequest, "The token is empty. Give the token on standard input, or use token clear.")
        }
        if let problem = BearerToken.problem(clean, source: "standard input") {
            throw SatelliteError(.invalidRequest, problem + " Give the token alone, on one line.")
        }
        let file = path(stateDirectory: stateDirectory)
        do {
            try AtomicFile.makeFolder(stateDirectory, mode: 0o700)
            try AtomicFile.write(Array((clean + "\n").utf8), to: file, mode: 0o600)
        } catch {
            throw error.satelliteError("The token could not be saved")
        }
    }

    /// What the token file holds now (nil: there is none), to put back with `restore`.
    public static func saved(stateDirectory: String) -> [UInt8]? {
        try? FileSystem.read(path(stateDirectory: stateDirectory))
    }

    /// Puts back what `saved` gave (nil: removes the file), when a pairing cannot be finished.
    public static func restore(_ saved: [UInt8]?, stateDirectory: String) throws(SatelliteError) {
        let file = path(stateDirectory: stateDirectory)
        do {
            if let saved { try AtomicFile.write(saved, to: file, mode: 0o600) } else { _ = try AtomicFile.remove(file) }
        } catch {
            throw error.satelliteError("The token before the pairing could not be put back")
        }
    }

    /// Removes the token file. Returns false when there was none.
    @discardableResult
    public static func clear(stateDirectory: String) throws(SatelliteError) -> Bool {
        do {
            return try AtomicFile.remove(path(stateDirectory: stateDirectory))
        } catch {
            throw error.satelliteError("The token could not be removed")
        }
    }
}
