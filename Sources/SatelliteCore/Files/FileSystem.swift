// The few file calls the daemon makes, over Glibc: reading a file whole, and
// asking whether a path exists, runs, or is a folder. FoundationEssentials'
// FileManager and Data(contentsOf:) did this, and linking FoundationEssentials
// at all cost the daemon 6.3 MB on disk (15.7 against 9.4 MB) and 0.7 MiB
// resident (BENCHMARKS.md, "What each binary weighs"). A failure keeps its errno,
// so a message can say "Permission denied" as the system does (Error.fileReason).
import Glibc

public enum FileSystem {
    /// A call that failed, with its errno, or a file that is not one this reads.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let errno: Int32
        private let reason: String?
        public init(errno: Int32) {
            self.errno = errno
            reason = nil
        }
        init(errno: Int32, reason: String) {
            self.errno = errno
            self.reason = reason
        }
        /// The system's words for it, such as "No such file or directory".
        public var description: String { reason ?? String(cString: strerror(errno)) }
    }

    /// The most `read` takes: far more than any file the daemon reads (a config, a cue of 5 s, a model's manifest).
    public static let readLimit = 16 << 20

    /// The whole file at `path`. Only a regular file is read: a FIFO would hold the daemon in `open`, and
    /// /dev/zero would never end (FoundationEssentials refused both too).
    public static func read(_ path: String) throws(Failure) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw Failure(errno: errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Failure(errno: errno) }
        if info.st_mode & S_IFMT == S_IFDIR { throw Failure(errno: EISDIR) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw Failure(errno: EINVAL, reason: "it is not a regular file") }
        guard info.st_size <= readLimit else { throw Failure(errno: EFBIG, reason: "it is larger than 16 MiB") }
        // One byte more than its size, so that the end is seen without growing; a file that grows while
        // it is read is read to its end, within the limit.
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size) + 1)
        var filled = 0
        while true {
            if filled == bytes.count {
                guard filled <= readLimit else { throw Failure(errno: EFBIG, reason: "it is larger than 16 MiB") }
                bytes += [UInt8](repeating: 0, count: min(max(bytes.count, 4096), readLimit + 1 - bytes.count))
            }
            let count = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if count > 0 {
                filled += count
            } else if count == 0 {
                bytes.removeLast(bytes.count - filled)
                return bytes
            } else if errno != EINTR {
                throw Failure(errno: errno)
            }
        }
    }

    /// Whether something is at `path`, following a symbolic link.
    public static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Whether `path` is a folder, following a symbolic link.
    public static func isFolder(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// Whether `path` is a file this process may run (a folder is not).
    public static func isRunnable(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT != S_IFDIR && access(path, X_OK) == 0
    }

    /// The names in the folder at `path`, without "." and ".."; nil when it cannot be read.
    public static func names(in path: String) -> [String]? {
        guard let folder = opendir(path) else { return nil }
        defer { closedir(folder) }
        var names: [String] = []
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Makes the folder at `path` and any missing above it, with mode 0755 less the umask.
    public static func makeFolders(_ path: String) throws(Failure) {
        var made = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            made += "/" + part
            if mkdir(made, 0o755) != 0 && errno != EEXIST { throw Failure(errno: errno) }
        }
        guard isFolder(path) else { throw Failure(errno: ENOTDIR) }
    }

    /// Where the symbolic link at `path` points; nil when it is not one.
    public static func linkTarget(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = buffer.withUnsafeMutableBufferPointer { readlink(path, $0.baseAddress!, $0.count - 1) }
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
