// Runs a program for a test and awaits its end without blocking a thread of
// the cooperative pool (there are only two on this machine). Output goes to
// files, so a chatty program can never fill a pipe and hang.
import Foundation
import TestSupport

struct Finished: Sendable {
    let status: Int32
    let out: String
    let err: String
}

enum Subprocess {
    /// Runs to the end and returns its exit status and output; `input`, when given, is its
    /// standard input (else /dev/null).
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                    input: String? = nil) async throws -> Finished {
        try await run(executable, arguments, environment: environment, input: input, holdingInputUntil: nil)
    }

    /// Runs to the end with standard input a pipe that stays open, after `input`, until
    /// `release` returns (for `listen --hold`, which ends when its standard input closes).
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                    input: String? = nil, holdingInputUntil release: (@Sendable () async -> Void)?) async throws -> Finished {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sub-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let outURL = dir.appendingPathComponent("out"), errURL = dir.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        let stdin = Pipe()
        process.standardInput = input == nil && release == nil ? FileHandle.nullDevice : stdin
        let (ended, ending) = AsyncStream.makeStream(of: Int32.self)
        process.terminationHandler = { ending.yield($0.terminationStatus) }
        try process.run()
        TestChildren.tie(process)
        // A program may end without reading its input (parlourctl setup with no terminal): EPIPE, not a crash.
        if let input { try? stdin.fileHandleForWriting.write(contentsOf: Data(input.utf8)) }
        if let release { await release() }
        try? stdin.fileHandleForWriting.close()
        var status: Int32 = -1
        for await code in ended {
            status = code
            break
        }
        return Finished(status: status,
                        out: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
                        err: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
    }

    /// Runs a shell-free pipeline step and fails the test with its stderr when it fails.
    @discardableResult
    static func check(_ executable: String, _ arguments: [String]) async throws -> String {
        let done = try await run(executable, arguments)
        guard done.status == 0 else {
            throw TestFailure("\(executable) \(arguments.joined(separator: " ")) exited \(done.status): \(done.err)")
        }
        return done.out
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Where the package's files and built programs are.
enum Package {
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var binDirectory: String {
        ProcessInfo.processInfo.environment["PARLOUR_BIN_DIR"] ?? root.appendingPathComponent(".build/debug").path
    }

    static var python: String {
        ProcessInfo.processInfo.environment["PARLOUR_TEST_PYTHON"] ?? root.appendingPathComponent(".build/test-venv/bin/python").path
    }

    static func temporaryDirectory(_ prefix: String) throws -> URL {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
