// The few file calls the daemon makes, over Glibc: reading a file whole, and
// asking whether a path exists, runs, or is a folder. FoundationEssentials'
// FileManager and Data(contentsOf:) did this, and linking FoundationEssentials
// at all cost the daemon about 5 MB on disk and its pages in memory
// (BENCHMARKS.md, "The daemon without Foundation"). A failure keeps its errno,
// so a message can say "Permission denied" as the system does (Error.fileReason).
import Glibc

public enum FileSystem {
    /// A call that failed, with its errno.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let errno: Int32
        public init(errno: Int32) { self.errno = errno }
        /// The system's words for it, such as "No such file or directory".
        public var description: String { String(cString: strerror(errno)) }
    }

    /// The whole file at `path`.
    public static func read(_ path: String) throws(Failure) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(errno: errno) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var info = stat()
        if fstat(fd, &info) == 0, info.st_size > 0 { bytes.reserveCapacity(Int(info.st_size)) }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes.append(contentsOf: chunk[..<count])
            } else if count == 0 {
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
