// Who may control the satellite, from the outside: the control socket is 0660
// and group parlour; an outsider (uid 65534, run through setpriv) who can open
// a loosened socket may read but is refused every change, and the refusal is
// logged with the uid; a member of the group may change things; and parlourctl
// run by a user who may not open the socket says permission_denied, exit 1.
import Foundation
import TestSupport
import Testing
import SatelliteCore

@Suite("Only root, the daemon's user and group parlour may change the satellite", .serialized, .timeLimit(.minutes(1)))
struct AccessTests {
    static let nobody = "65534"

    /// The gid of group parlour, created as the sysusers file would when this machine has none.
    static func parlourGroup() throws -> gid_t {
        if getgrnam(AccessPolicy.group) == nil {
            try Spawn.run("groupadd", package: "passwd", ["--system", AccessPolicy.group])
        }
        return try #require(getgrnam(AccessPolicy.group)).pointee.gr_gid
    }

    /// parlourctl run as uid and gid 65534, with `groups` as its only supplementary groups.
    static func asNobody(_ daemon: DaemonHarness, groups: [gid_t] = [], _ arguments: String...) async throws -> Finished {
        let groupOption = groups.isEmpty ? "--clear-groups" : "--groups=" + groups.map(String.init).joined(separator: ",")
        return try await Subprocess.run("/usr/bin/setpriv",
                                        ["--reuid=\(nobody)", "--regid=\(nobody)", groupOption, Package.binDirectory + "/parlourctl"]
                                            + arguments, environment: daemon.environment)
    }

    @Test("the control socket is mode 0660, group parlour")
    func socketMode() async throws {
        let gid = try Self.parlourGroup()
        let daemon = try await DaemonHarness.start(config: ["transport": "record"])
        var info = stat()
        #expect(stat(daemon.socket, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o660)
        #expect(info.st_gid == gid)
        #expect(await daemon.stop() == 0)
    }

    @Test("an outsider who can open the socket may read, but every change is refused and logged with the uid")
    func outsiderRefused() async throws {
        let gid = try Self.parlourGroup()
        let daemon = try await DaemonHarness.start(config: ["transport": "record", "room": "hall"])
        // An admin loosened the socket for monitoring: reading is open to all who can open it.
        #expect(chmod(daemon.socket, 0o666) == 0)

        let status = try await Self.asNobody(daemon, "status")
        #expect(status.status == 0, "\(status.err)")
        #expect(status.out.contains("Room:       hall"))
        #expect(try await Self.asNobody(daemon, "room").out == "hall\n")

        let mute = try await Self.asNobody(daemon, "mute")
        #expect(mute.status == 1)
        #expect(mute.err.contains("sudo usermod -aG parlour nobody"), "\(mute.err)")
        for command in [["--json", "mute"], ["--json", "room", "den"], ["--json", "volume", "10"], ["--json", "cancel"]] {
            let refused = try await Subprocess.run("/usr/bin/setpriv", ["--reuid=\(Self.nobody)", "--regid=\(Self.nobody)",
                                                   "--clear-groups", Package.binDirectory + "/parlourctl"] + command,
                                                   environment: daemon.environment)
            #expect(try JSONValue.parse(refused.out)["error"] == "permission_denied", "\(command)")
        }
        let after = try await daemon.result("status")
        #expect(after["response"]?["muted"] == false)
        #expect(after["response"]?["room"] == "hall")
        #expect(daemon.stderr.contains("Refused mute from uid 65534 (nobody), gid 65534"))
        #expect(daemon.stderr.contains("uid=65534"))

        // In group parlour, the same user may.
        let member = try await Self.asNobody(daemon, groups: [gid], "mute")
        #expect(member.status == 0, "\(member.err)")
        #expect(try await daemon.result("status")["response"]?["muted"] == true)
        #expect(daemon.stderr.contains("mute from uid 65534 (nobody), gid 65534."))
        // And root may, always.
        #expect(try await daemon.ctl("unmute").status == 0)
        #expect(daemon.stderr.contains("unmute from uid 0 (root), gid 0."))
        #expect(await daemon.stop() == 0)
    }

    @Test("parlourctl run by a user who may not open the socket says permission_denied and exits 1")
    func socketClosedToUser() async throws {
        _ = try Self.parlourGroup()
        let daemon = try await DaemonHarness.start(config: ["transport": "record"])
        let done = try await Self.asNobody(daemon, "status")
        #expect(done.status == 1)
        #expect(done.err.contains("sudo usermod -aG parlour nobody"), "\(done.err)")
        #expect(done.err.contains("log in again"))
        let json = try await Self.asNobody(daemon, "--json", "status")
        #expect(json.status == 1)
        #expect(try JSONValue.parse(json.out)["error"] == "permission_denied")
        #expect(await daemon.stop() == 0)
    }
}
