// The daemon as systemd and an admin meet it: readiness, status sentences and
// stopping over real sd_notify datagrams, a clean exit on SIGTERM, refusing a
// bad config or a socket another daemon holds, and native journal records.
import Foundation
import Testing
import SatelliteCore
@testable import Satellite

@Suite("The daemon starts, reports and stops as a service", .timeLimit(.minutes(1)))
struct DaemonLifecycleTests {
    @Test("READY=1 comes once the socket accepts, STATUS= says the state, STOPPING=1 and exit 0 on SIGTERM")
    func notify() async throws {
        let daemon = try await DaemonHarness.start(config: ["room": "kitchen", "transport": "record"])
        // READY=1 has arrived, so the socket must accept now.
        #expect(try await daemon.ctl("status").status == 0)
        let ready = daemon.notify.messages
        #expect(ready.contains("READY=1"))
        #expect(ready.contains("STATUS=No server yet: pair with parlourctl pair LINK."))
        #expect(await daemon.stop() == 0)
        await daemon.notify.wait(for: "STOPPING=1")
        #expect(!FileManager.default.fileExists(atPath: daemon.socket))
    }

    @Test("tasks and actors run on the main thread, in the daemon's loop: libdispatch starts no thread",
          .enabled(if: MainLoop.isAvailable, "built without the loop (MainLoop.swift): libdispatch's pool runs the tasks"))
    func mainLoop() async throws {
        let daemon = try await DaemonHarness.start(config: ["room": "kitchen", "transport": "record"])
        // A request goes from the control thread to an actor and back: work for the loop.
        #expect(try await daemon.ctl("status").status == 0)
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/task")
        let names = tasks.compactMap { try? String(contentsOfFile: "/proc/\(daemon.pid)/task/\($0)/comm", encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(names.count == tasks.count && names.contains("control"), "\(names)")
        // libdispatch's threads are named after its queues: "com.apple.root.default-qos" and the like.
        #expect(!names.contains { $0.contains("qos") || $0.contains("dispatch") }, "\(names)")
        #expect(await daemon.stop() == 0)
    }

    @Test("a notify socket that systemd stops reading holds up no request; what it missed follows once it reads")
    func stalledNotify() async throws {
        let daemon = try await DaemonHarness.start(config: ["room": "kitchen", "transport": "record"])
        daemon.notify.hold()
        // Each change of room is a STATUS= line; a few fill the unread socket, and its sender then waits.
        for index in 0..<30 {
            #expect(try await daemon.ctl("room", "room\(index)").status == 0)
        }
        daemon.notify.release()
        #expect(await daemon.stop() == 0)
        // STOPPING=1 comes after every line before it.
        await daemon.notify.wait(for: "STOPPING=1")
        // One STATUS= line for each change of room (and the states'), none lost.
        #expect(daemon.notify.messages.filter { $0.hasPrefix("STATUS=") }.count > 30, "\(daemon.notify.messages.count) lines")
    }

    @Test("a wrong value in the config stops the daemon with the file and the key")
    func badConfig() async throws {
        let dir = try Package.temporaryDirectory("badconfig")
        let file = dir.appendingPathComponent("satellite.json").path
        try #"{"audio": {"silenceMs": "800"}, "colour": "red"}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let done = try await Subprocess.run(Package.binDirectory + "/parlour-satellite",
                                            ["--config", file, "--state-dir", dir.path, "--socket", dir.path + "/c.sock"])
        #expect(done.status == 78)
        #expect(done.err.contains(file))
        #expect(done.err.contains("audio.silenceMs"))
    }

    @Test("an unknown key is a warning that names it, and the daemon runs")
    func unknownKey() async throws {
        let daemon = try await DaemonHarness.start(config: ["transport": "record", "colour": "red"])
        #expect(daemon.stderr.contains("\"colour\""))
        #expect(await daemon.stop() == 0)
    }

    @Test("a second daemon on the same socket refuses to start and says why")
    func socketInUse() async throws {
        let first = try await DaemonHarness.start(config: ["transport": "record"])
        let second = try await Subprocess.run(Package.binDirectory + "/parlour-satellite",
                                              ["--socket", first.socket, "--state-dir", first.stateDirectory],
                                              environment: first.environment)
        #expect(second.status == 1)
        #expect(second.err.contains("already listening"))
        // The first one still answers.
        #expect(try await first.ctl("status").status == 0)
        #expect(await first.stop() == 0)
    }

    @Test("a socket left by a dead daemon is taken over")
    func staleSocket() async throws {
        let dir = try Package.temporaryDirectory("stale")
        let path = dir.path + "/control.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        _ = UnixSocketAddress(path)?.withSockaddr { bind(fd, $0, $1) } ?? -1
        close(fd)  // bound, never listened: what a killed daemon leaves
        let daemon = try await DaemonHarness.start(config: ["transport": "record"], environment: ["PARLOUR_SATELLITE_SOCKET": path])
        #expect(try await daemon.ctl("status").status == 0)
        await daemon.stop()
    }

    @Test("a writer's backlog (the journal's, the notifications'): past its limit items are dropped and counted, and the count is said once it has caught up")
    func journalBacklog() {
        let backlog = Backlog(limit: 2)
        #expect(backlog.admit() && backlog.admit())
        #expect(!backlog.admit() && !backlog.admit() && !backlog.admit())
        #expect(backlog.written() == nil, "one still waits")
        #expect(backlog.admit())
        #expect(backlog.written() == nil)
        #expect(backlog.written() == 3)
        #expect(backlog.admit())
        #expect(backlog.written() == nil, "nothing dropped since")
    }
}

// Both bind journald's socket path (in the tests' own mount namespace): one at a time.
@Suite("The daemon writes to journald", .serialized, .timeLimit(.minutes(1)))
struct JournaldTests {
    @Test("under systemd the daemon writes native journal records with the PARLOUR_ fields")
    func journal() async throws {
        let journal = try JournalSocket()
        defer { journal.close() }
        let daemon = try await DaemonHarness.start(config: ["room": "kitchen", "transport": "record"], journal: true)
        let record = await journal.next { $0["PARLOUR_EVENT"] == "state" }
        #expect(record?["SYSLOG_IDENTIFIER"] == "parlour-satellite")
        #expect(record?["PARLOUR_ROOM"] == "kitchen")
        #expect(record?["PARLOUR_STATE"] != nil)
        #expect(record?["PRIORITY"] != nil)
        #expect(record?["MESSAGE"]?.hasPrefix("State ") == true)
        await daemon.stop()
        // Native records do not also go to stderr.
        #expect(!daemon.stderr.contains("State "))
    }

    @Test("a journal that stops reading holds up no request; its records wait on a thread of their own and all arrive once it reads")
    func stalledJournal() async throws {
        let journal = try JournalSocket(reading: false)
        defer { journal.close() }
        let daemon = try await DaemonHarness.start(config: ["room": "kitchen", "transport": "record"], journal: true)
        // Each change of room is a record; a few fill the unread socket, and its writer then waits.
        for index in 0..<20 {
            #expect(try await daemon.ctl("room", "room\(index)").status == 0)
        }
        journal.startReading()
        let last = await journal.next { $0["PARLOUR_ROOM"] == "room19" }
        #expect(last != nil)
        #expect(await daemon.stop() == 0)
    }
}
