// Who may do what over the control socket. The socket is 0660, group
// `parlour`, so only its owner, that group and root can open it at all; on top
// of that every command that changes something (and every `server ...`
// command, which uses the house's token) is checked against the peer's
// credentials from the kernel (SO_PEERCRED and SO_PEERGROUPS), never against
// anything the caller says. Reading (status, watch, version, servers) stays open
// to whoever could open the socket, so an admin may loosen the socket's mode
// for monitoring without handing out control.

/// The access rule for control commands.
public enum AccessPolicy {
    /// The group whose members may control the satellite (created by the sysusers file).
    public static let group = "parlour"

    /// Who is asking, as the kernel says.
    public struct Peer: Sendable, Equatable {
        public var pid: Int32
        public var uid: UInt32
        public var gid: UInt32
        /// Supplementary groups; the primary `gid` may or may not be among them.
        public var groups: [UInt32]
        /// The user's name, when the user database knows the uid.
        public var user: String?

        public init(pid: Int32, uid: UInt32, gid: UInt32, groups: [UInt32], user: String? = nil) {
            self.pid = pid
            self.uid = uid
            self.gid = gid
            self.groups = groups
            self.user = user
        }

        /// `uid 1000 (alice), gid 1000`, for a journal line.
        public var description: String {
            "uid \(uid)\(user.map { " (\($0))" } ?? ""), gid \(gid)"
        }
    }

    /// Whether `peer` may run `command`: reading commands always; the others for root, the
    /// daemon's own user, and members of group `parlour` (`groupID`, nil when there is no such
    /// group). A peer the kernel did not name (nil) may only read.
    public static func allows(_ command: ControlCommand, peer: Peer?, daemonUID: UInt32, groupID: UInt32?) -> Bool {
        guard command.needsControl else { return true }
        guard let peer else { return false }
        if peer.uid == 0 || peer.uid == daemonUID { return true }
        guard let groupID else { return false }
        return peer.gid == groupID || peer.groups.contains(groupID)
    }

    /// The refusal a peer gets, with the way to be let in.
    public static func refusal(_ command: ControlCommand, peer: Peer?) -> SatelliteError {
        SatelliteError(.permissionDenied, "Only root and the members of the \(group) group may \(command.name) on this "
            + "satellite. \(howToGetAccess(user: peer?.user))")
    }

    /// One sentence: how a user gets into the group (parlourctl says it too when the socket is closed to it).
    public static func howToGetAccess(user: String?) -> String {
        "Ask an admin to add you to the \(group) group (sudo usermod -aG \(group) \(user ?? "USER")), then log in again."
    }
}
