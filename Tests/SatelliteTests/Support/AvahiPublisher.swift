// A service advertised for a test by the real `avahi-publish`, as a Parlour
// server (or a phone) would be. It runs as a subprocess so that stopping it is a
// real client vanishing from avahi-daemon; it must run inside scripts/netns-run.
import Foundation
import TestSupport
import Synchronization

final class AvahiPublisher: Sendable {
    let name: String
    private let process: Process

    /// Publishes `name` and returns once avahi-daemon has established it.
    /// `host`: the host name its SRV record names (avahi-publish -H), instead of the daemon's own.
    static func start(name: String, type: String = "_parlour._tcp", port: Int, txt: [String], host: String? = nil) async throws -> AvahiPublisher {
        try await start(arguments: ["-s"] + (host.map { ["-H", $0] } ?? []) + [name, type, String(port)] + txt, name: name)
    }

    /// Publishes that host name at `address` (an A record, no reverse), as a machine answering for it would.
    static func address(host: String, _ address: String) async throws -> AvahiPublisher {
        try await start(arguments: ["-a", "-R", host, address], name: host)
    }

    private static func start(arguments: [String], name: String) async throws -> AvahiPublisher {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/avahi-publish")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        TestChildren.tie(process)
        // Our copy of the write end would keep the pipe open after the child ends.
        try output.fileHandleForWriting.close()
        let handle = output.fileHandleForReading
        // "Established under name 'X'" comes on stderr; read it on a thread of its
        // own so that a blocking read cannot hold the cooperative pool.
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread {
                var text = ""
                var waiting = true
                while true {
                    let data = handle.availableData
                    if data.isEmpty { break }
                    text += String(decoding: data, as: UTF8.self)
                    if waiting, text.contains("Established under name") {
                        waiting = false
                        continuation.resume()
                    }
                }
                // Kept reading to the end so that the pipe never fills.
                if waiting {
                    continuation.resume(throwing: TestFailure("avahi-publish \(name) ended before publishing: \(text)"))
                }
            }.start()
        }
        return AvahiPublisher(name: name, process: process)
    }

    private init(name: String, process: Process) {
        self.name = name
        self.process = process
    }

    /// Kills avahi-publish and awaits its end; avahi-daemon then withdraws the
    /// service of the vanished client, with a goodbye on the network. SIGKILL,
    /// because a child started from a Swift task inherits that thread's blocked
    /// signals, SIGTERM among them.
    func stop() async {
        guard process.isRunning else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // It may end on its own between the check and the handler: resume once either way.
            let once = Mutex(Optional(continuation))
            let resume: @Sendable () -> Void = { once.withLock { $0.take() }?.resume() }
            process.terminationHandler = { _ in resume() }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) } else { resume() }
        }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
