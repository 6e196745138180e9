// Replaces a state file so that a crash or a power cut leaves the old file or
// the new one, never half of either (INTERFACE.md). Easy to get wrong: the
// temporary must be created with its final mode (a token must never be readable
// by others, not even for a moment), both it and the folder must be fsynced,
// and a failure must not leave the temporary behind.
import Glibc
import SatelliteCore

/// Atomic replacement and removal of a small file.
public enum AtomicFile {
    /// A file that could not be written or removed: which, and the system call that failed.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let path: String
        public let failure: POSIXFailure

        public var description: String { "\(path): \(failure)" }

        /// The error a person sees: `what` went wrong, where and why, and what to check.
        public func satelliteError(_ what: String) -> SatelliteError {
            let code: ErrorCode = [EACCES, EPERM, EROFS].contains(failure.errno) ? .permissionDenied : .internalError
            return SatelliteError(code, "\(what) (\(self)). Check that the satellite's user may write to that folder.")
        }
    }

    /// Replaces `path` with `data`, which gets exactly `mode`: a temporary file in the same folder
    /// (created with that mode), written whole and fsynced, renamed over `path`, then the folder fsynced.
    public static func write(_ data: [UInt8], to path: String, mode: mode_t) throws(Failure) {
        try write(data, to: path, mode: mode, beforeRename: { _ throws(POSIXFailure) in })
    }

    /// `write`, with a look at the finished temporary file before it is renamed (for tests).
    static func write(_ data: [UInt8], to path: String, mode: mode_t,
                      beforeRename: (String) throws(POSIXFailure) -> Void) throws(Failure) {
        let (fd, temporary) = try createTemporary(beside: path, mode: mode)
        do throws(POSIXFailure) {
            defer { close(fd) }
            // umask may only have taken bits away at open; fchmod makes the mode exactly `mode`.
            try POSIX.call("fchmod") { fchmod(fd, mode) }
            let unwritten: POSIXFailure? = data.withUnsafeBytes { bytes in
                do throws(POSIXFailure) { try POSIX.writeAll(fd, bytes) } catch { return error }
                return nil
            }
            if let unwritten { throw unwritten }
            try POSIX.call("fsync") { fsync(fd) }
            try beforeRename(temporary)
            try POSIX.call("rename") { rename(temporary, path) }
        } catch {
            unlink(temporary)
            throw Failure(path: path, failure: error)
        }
        try syncFolder(of: path)
    }

    /// Removes `path` and makes the removal durable. Returns false when there was no such file.
    @discardableResult
    public static func remove(_ path: String) throws(Failure) -> Bool {
        do {
            try POSIX.call("unlink") { unlink(path) }
        } catch where error.errno == ENOENT {
            return false
        } catch {
            throw Failure(path: path, failure: error)
        }
        try syncFolder(of: path)
        return true
    }

    /// Removes the temporaries a killed writer of `path` left behind (`.<name>.<random>.tmp`),
    /// which may hold a secret. Quietly: a folder that cannot be read has none to remove.
    public static func removeLeftovers(of path: String) {
        let (folder, name) = split(path)
        guard let entries = FileSystem.names(in: folder) else { return }
        for entry in entries where entry.hasPrefix(".\(name).") && entry.hasSuffix(".tmp") {
            unlink("\(folder)/\(entry)")
        }
    }

    /// Whether a state file could be written in `folder` now: creates a temporary file there the way
    /// `write` does (its name is `.doctor.<random>.tmp`, which `removeLeftovers(of: "<folder>/doctor")`
    /// clears after a kill) and removes it again. The folder is made (0700) if it is missing.
    public static func checkWritable(_ folder: String) throws(Failure) {
        try makeFolder(folder, mode: 0o700)
        let (fd, temporary) = try createTemporary(beside: SatellitePaths.joined(folder, "doctor"), mode: 0o600)
        close(fd)
        do {
            try POSIX.call("unlink") { unlink(temporary) }
        } catch {
            throw Failure(path: temporary, failure: error)
        }
    }

    /// Creates `folder` and any parents it lacks, with `mode` (less the umask) for the new ones.
    public static func makeFolder(_ folder: String, mode: mode_t) throws(Failure) {
        var path = folder.hasPrefix("/") ? "" : "."
        for part in folder.split(separator: "/") {
            path += "/" + part
            do {
                try POSIX.call("mkdir") { mkdir(path, mode) }
            } catch where error.errno == EEXIST {
                continue
            } catch {
                throw Failure(path: path, failure: error)
            }
        }
    }

    /// `<folder>/.<name>.<random>.tmp`, opened exclusively so two writers never share one.
    private static func createTemporary(beside path: String, mode: mode_t) throws(Failure) -> (Int32, String) {
        let (folder, name) = split(path)
        while true {
            let temporary = "\(folder)/.\(name).\(UInt32.random(in: 0...UInt32.max)).tmp"
            do {
                let fd = try POSIX.call("open") { open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode) }
                return (fd, temporary)
            } catch where error.errno == EEXIST {
                continue
            } catch {
                throw Failure(path: path, failure: error)
            }
        }
    }

    /// Makes a rename or unlink in the folder of `path` survive a power cut.
    private static func syncFolder(of path: String) throws(Failure) {
        let folder = split(path).folder
        do throws(POSIXFailure) {
            let fd = try POSIX.call("open") { open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
            defer { close(fd) }
            do {
                try POSIX.call("fsync") { fsync(fd) }
            } catch where error.errno == EINVAL {
                // Some file systems cannot sync a folder; the rename is then as durable as they make it.
            }
        } catch {
            throw Failure(path: path, failure: error)
        }
    }

    private static func split(_ path: String) -> (folder: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let folder = path[..<slash]
        return (folder.isEmpty ? "/" : String(folder), String(path[path.index(after: slash)...]))
    }
}
