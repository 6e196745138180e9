// FileSystem's calls on a real folder, and its failures in the system's words.
import Foundation
import SatelliteCore
import Testing

@Suite("FileSystem reads files and says why it could not")
struct FileSystemTests {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fs-\(UUID().uuidString)").path

    @Test("a file reads whole, larger than one read")
    func whole() throws {
        try FileSystem.makeFolders(folder + "/a/b")
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try Data(bytes).write(to: URL(fileURLWithPath: folder + "/a/b/file"))
        #expect(try FileSystem.read(folder + "/a/b/file") == bytes)
        try Data().write(to: URL(fileURLWithPath: folder + "/a/empty"))
        #expect(try FileSystem.read(folder + "/a/empty") == [])
        #expect(FileSystem.names(in: folder + "/a")?.sorted() == ["b", "empty"])
        #expect(FileSystem.isFolder(folder + "/a") && !FileSystem.isFolder(folder + "/a/b/file"))
        #expect(FileSystem.exists(folder + "/a/b/file") && !FileSystem.exists(folder + "/a/c"))
        try FileSystem.makeFolders(folder + "/a/b")  // already there: no error
        try? FileManager.default.removeItem(atPath: folder)
    }

    @Test("a missing file, a folder and a forbidden file each fail with the system's words")
    func failures() throws {
        #expect(throws: FileSystem.Failure(errno: ENOENT)) { try FileSystem.read(folder + "/missing") }
        #expect(throws: FileSystem.Failure(errno: EISDIR)) { try FileSystem.read("/") }
        #expect(FileSystem.Failure(errno: ENOENT).description == "No such file or directory")
        #expect(FileSystem.Failure(errno: EACCES).fileReason == "Permission denied")
        #expect(FileSystem.names(in: folder + "/missing") == nil)
        #expect(throws: FileSystem.Failure(errno: ENOTDIR)) { try FileSystem.makeFolders("/dev/null/x") }
    }

    @Test("only a regular file is read: a FIFO, a device or a folder fails at once, and a huge file too")
    func onlyRegular() throws {
        try FileSystem.makeFolders(folder)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fifo = folder + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        // With no writer, an open without O_NONBLOCK would wait here for ever.
        for path in [fifo, "/dev/zero"] {
            do {
                _ = try FileSystem.read(path)
                Issue.record("\(path) was read")
            } catch {
                #expect(error.description == "it is not a regular file")
            }
        }
        let huge = folder + "/huge"
        let fd = open(huge, O_CREAT | O_WRONLY, 0o600)
        #expect(ftruncate(fd, off_t(FileSystem.readLimit + 1)) == 0)
        close(fd)
        do {
            _ = try FileSystem.read(huge)
            Issue.record("a file over the limit was read")
        } catch {
            #expect(error.errno == EFBIG && error.description == "it is larger than 16 MiB")
        }
    }

    @Test("only a file with a mode to run it runs")
    func runnable() throws {
        try FileSystem.makeFolders(folder)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let plain = folder + "/plain"
        try Data("x".utf8).write(to: URL(fileURLWithPath: plain))
        #expect(chmod(plain, 0o644) == 0)
        #expect(FileSystem.isRunnable("/bin/sh"))
        #expect(!FileSystem.isRunnable("/bin"))
        #expect(!FileSystem.isRunnable(plain))
        #expect(FileSystem.linkTarget("/proc/self/exe")?.hasPrefix("/") == true)
        #expect(FileSystem.linkTarget("/etc/hostname") == nil)
    }
}
