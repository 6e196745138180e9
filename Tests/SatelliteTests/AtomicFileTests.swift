import Foundation
import Synchronization
import Testing
@testable import Satellite
import SatelliteCore

@Suite("atomic state files")
struct AtomicFileTests {
    /// A fresh folder for one test, removed at the end.
    final class Folder {
        let path: String
        init() {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("atomic-\(UUID().uuidString)").path
            try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
        func file(_ name: String) -> String { path + "/" + name }
        var names: [String] { (try? FileManager.default.contentsOfDirectory(atPath: path).sorted()) ?? [] }
    }

    private func mode(_ path: String) -> mode_t {
        var info = stat()
        #expect(stat(path, &info) == 0)
        return info.st_mode & 0o7777
    }

    private func contents(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test("a file is replaced whole, with exactly the mode asked for, and nothing else is left in the folder")
    func replacedWhole() throws {
        let folder = Folder()
        let target = folder.file("token")
        try AtomicFile.write(Array("old\n".utf8), to: target, mode: 0o644)
        #expect(mode(target) == 0o644)
        try AtomicFile.write(Array("new\n".utf8), to: target, mode: 0o600)
        #expect(contents(target) == "new\n")
        #expect(mode(target) == 0o600)
        try AtomicFile.write([UInt8](), to: target, mode: 0o640)
        #expect(contents(target) == "")
        #expect(mode(target) == 0o640)
        #expect(folder.names == ["token"])
    }

    @Test("the temporary file is in the same folder, has the final mode and all the bytes before it is renamed")
    func temporaryBeforeRename() throws {
        let folder = Folder()
        let target = folder.file("token")
        try AtomicFile.write(Array("old\n".utf8), to: target, mode: 0o600)
        let payload = [UInt8](repeating: 0x61, count: 200_000)
        var seen: String?
        try AtomicFile.write(payload, to: target, mode: 0o600) { temporary throws(POSIXFailure) in
            seen = temporary
            #expect((temporary as NSString).deletingLastPathComponent == folder.path)
            #expect(mode(temporary) == 0o600)
            #expect((try? FileSystem.read(temporary)) == payload)
            // Until the rename, the target is still the old file.
            #expect(contents(target) == "old\n")
        }
        #expect(seen != nil)
        #expect((try? FileSystem.read(target)) == payload)
        #expect(folder.names == ["token"])
    }

    @Test("a failure before the rename leaves the old file and no temporary")
    func failureBeforeRename() throws {
        let folder = Folder()
        let target = folder.file("pin.json")
        try AtomicFile.write(Array("old".utf8), to: target, mode: 0o644)
        #expect(throws: AtomicFile.Failure(path: target, failure: POSIXFailure("fsync", errno: EIO))) {
            try AtomicFile.write(Array("new".utf8), to: target, mode: 0o644) { _ throws(POSIXFailure) in
                throw POSIXFailure("fsync", errno: EIO)
            }
        }
        #expect(contents(target) == "old")
        #expect(folder.names == ["pin.json"])
    }

    @Test("a rename that fails (the target is a folder) throws, names the call, and leaves no temporary")
    func renameFails() throws {
        let folder = Folder()
        let target = folder.file("token")
        try FileManager.default.createDirectory(atPath: target + "/inside", withIntermediateDirectories: true)
        do {
            try AtomicFile.write(Array("secret\n".utf8), to: target, mode: 0o600)
            Issue.record("the write should have failed")
        } catch {
            #expect(error.path == target)
            #expect(error.failure.function == "rename")
            #expect(error.description.hasPrefix(target + ": rename: "))
        }
        #expect(folder.names == ["token"])
        #expect(FileManager.default.fileExists(atPath: target + "/inside"))
    }

    @Test("writing into a folder that does not exist fails at open, naming the file")
    func missingFolder() {
        let folder = Folder()
        let target = folder.file("nowhere/token")
        #expect(throws: AtomicFile.Failure(path: target, failure: POSIXFailure("open", errno: ENOENT))) {
            try AtomicFile.write(Array("x".utf8), to: target, mode: 0o600)
        }
    }

    @Test("a failure becomes an error a person can act on: permission_denied when it is one")
    func personFacingError() {
        let denied = AtomicFile.Failure(path: "/var/lib/parlour-satellite/token", failure: POSIXFailure("open", errno: EACCES))
        let error = denied.satelliteError("The token could not be saved")
        #expect(error.code == .permissionDenied)
        #expect(error.message.hasPrefix("The token could not be saved (/var/lib/parlour-satellite/token: open: "))
        #expect(error.message.contains("may write to that folder"))
        let other = AtomicFile.Failure(path: "/x", failure: POSIXFailure("fsync", errno: EIO)).satelliteError("x")
        #expect(other.code == .internalError)
    }

    @Test("remove deletes the file and says whether there was one")
    func remove() throws {
        let folder = Folder()
        let target = folder.file("token")
        try AtomicFile.write(Array("x".utf8), to: target, mode: 0o600)
        #expect(try AtomicFile.remove(target) == true)
        #expect(folder.names == [])
        #expect(try AtomicFile.remove(target) == false)
        #expect(try AtomicFile.remove(folder.file("nowhere/token")) == false)
    }

    @Test("makeFolder creates the missing parents and accepts a folder that exists")
    func makeFolder() throws {
        let folder = Folder()
        let nested = folder.file("a/b/state")
        try AtomicFile.makeFolder(nested, mode: 0o700)
        try AtomicFile.makeFolder(nested, mode: 0o700)
        var isFolder: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: nested, isDirectory: &isFolder) && isFolder.boolValue)
        #expect(mode(nested) & 0o077 == 0)
    }

    @Test("many writers at once never leave a torn file: every read is one whole write", .timeLimit(.minutes(1)))
    func concurrentWriters() throws {
        let folder = Folder()
        let target = folder.file("pin.json")
        let size = 64 * 1024
        // Each write is one byte value repeated, so a mix of two writes is easy to see.
        let payload: @Sendable (UInt8) -> [UInt8] = { [UInt8](repeating: $0, count: size) }
        try AtomicFile.write(payload(0), to: target, mode: 0o644)

        final class Tally: Sendable {
            let finished = Atomic<Int>(0)
            let failures = Mutex<[String]>([])
        }
        let tally = Tally()
        let writers = 6, writesEach = 40
        let group = DispatchGroup()
        for writer in 0..<writers {
            group.enter()
            Thread {
                for n in 0..<writesEach {
                    do {
                        try AtomicFile.write(payload(UInt8(1 + (writer * writesEach + n) % 250)), to: target, mode: 0o644)
                    } catch {
                        tally.failures.withLock { $0.append("\(error)") }
                    }
                }
                tally.finished.add(1, ordering: .sequentiallyConsistent)
                group.leave()
            }.start()
        }
        var reads = 0
        repeat {
            let data = try #require(FileManager.default.contents(atPath: target))
            #expect(data.count == size)
            #expect(data.allSatisfy { $0 == data.first })
            reads += 1
        } while tally.finished.load(ordering: .sequentiallyConsistent) < writers
        group.wait()

        #expect(reads > 0)
        #expect(tally.failures.withLock { $0 } == [])
        #expect(folder.names == ["pin.json"])
        #expect(mode(target) == 0o644)
    }
}
