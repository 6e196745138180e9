// The access rule of the control socket: who may run which command. Pure, so
// every combination of peer and command is checked here without a socket.
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("Access to the control socket")
struct AccessPolicyTests {
    static let reading: [ControlCommand] = [.status, .watch, .version, .servers, .room(name: nil), .volume(percent: nil)]
    static let controlling: [ControlCommand] = [
        .listen(hold: false), .listen(hold: true), .end, .cancel, .ask(text: "hi"), .pair(link: "parlour://pair"),
        .use(url: "http://den:8765"), .unpin, .tokenSet(token: "t"), .tokenClear, .room(name: "kitchen"), .room(name: ""),
        .roomReset, .mute, .unmute, .volume(percent: 30),
        // These only read, but reach the house's server with its token.
        .serverStatus, .serverDoctor, .serverLogs(service: "agent", lines: nil), .serverRestartAgent,
    ]

    static func peer(uid: UInt32, gid: UInt32 = 1000, groups: [UInt32] = []) -> AccessPolicy.Peer {
        AccessPolicy.Peer(pid: 42, uid: uid, gid: gid, groups: groups, user: "alice")
    }

    @Test("reading commands are open to anyone who could open the socket, even an unnamed peer", arguments: reading)
    func readingIsOpen(command: ControlCommand) {
        #expect(!command.needsControl)
        #expect(AccessPolicy.allows(command, peer: Self.peer(uid: 65534), daemonUID: 998, groupID: 995))
        #expect(AccessPolicy.allows(command, peer: nil, daemonUID: 998, groupID: nil))
    }

    @Test("the others: root, the daemon's user and group parlour (primary or supplementary) only", arguments: controlling)
    func controlIsGuarded(command: ControlCommand) {
        #expect(command.needsControl)
        #expect(AccessPolicy.allows(command, peer: Self.peer(uid: 0, gid: 0), daemonUID: 998, groupID: 995))
        #expect(AccessPolicy.allows(command, peer: Self.peer(uid: 998), daemonUID: 998, groupID: nil))
        #expect(AccessPolicy.allows(command, peer: Self.peer(uid: 1000, groups: [27, 995]), daemonUID: 998, groupID: 995))
        #expect(AccessPolicy.allows(command, peer: Self.peer(uid: 1000, gid: 995), daemonUID: 998, groupID: 995))
        #expect(!AccessPolicy.allows(command, peer: Self.peer(uid: 1000, groups: [27, 29]), daemonUID: 998, groupID: 995))
        // No group parlour on this machine: only root and the daemon's user.
        #expect(!AccessPolicy.allows(command, peer: Self.peer(uid: 1000, groups: [995]), daemonUID: 998, groupID: nil))
        // A peer the kernel did not name may not change anything.
        #expect(!AccessPolicy.allows(command, peer: nil, daemonUID: 998, groupID: 995))
    }

    @Test("the refusal names the command and how to get access, with the user's name")
    func refusal() {
        let error = AccessPolicy.refusal(.mute, peer: Self.peer(uid: 1000))
        #expect(error.code == .permissionDenied)
        #expect(error.message == "Only root and the members of the parlour group may mute on this satellite. "
            + "Ask an admin to add you to the parlour group (sudo usermod -aG parlour alice), then log in again.")
        #expect(AccessPolicy.refusal(.unpin, peer: nil).message.hasSuffix("(sudo usermod -aG parlour USER), then log in again."))
    }
}
