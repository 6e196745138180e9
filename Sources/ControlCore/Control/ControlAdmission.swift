// Who keeps a place on the control socket when a newcomer arrives. The caps
// keep the daemon's descriptors for its own work: at most `total` connections,
// at most `perUID` from one user. A newcomer over a cap takes the place of the
// oldest connection that has sent nothing yet (an idle client costs a place and
// does nothing with it); when every connection in the way has sent a request,
// the newcomer is the one turned away. Either way the one closed is told why.
// A flood of idle clients therefore cannot keep `status` from being answered.

/// The control socket's limits.
public struct ControlLimits: Sendable, Equatable {
    /// Connections in all.
    public var total: Int
    /// Connections from one uid.
    public var perUID: Int
    /// How long a connection may stay without sending one complete line (not once it has).
    public var idle: Duration
    /// How long a client may leave a result unread before it is dropped.
    public var sendTimeout: Duration

    public init(total: Int = 256, perUID: Int = 32, idle: Duration = .seconds(10), sendTimeout: Duration = .seconds(5)) {
        self.total = total
        self.perUID = perUID
        self.idle = idle
        self.sendTimeout = sendTimeout
    }
}

/// The admission rule, pure.
public enum ControlAdmission {
    /// A connection holding a place.
    public struct Holder: Sendable, Equatable {
        public var id: Int
        public var uid: UInt32?
        /// Has sent no complete line and carries no stream.
        public var idle: Bool

        public init(id: Int, uid: UInt32?, idle: Bool) {
            self.id = id
            self.uid = uid
            self.idle = idle
        }
    }

    public enum Decision: Sendable, Equatable {
        case admit
        /// Admit, after closing `id` with the error `message`.
        case admitEvicting(id: Int, message: String)
        /// Close the newcomer with the error `message`.
        case refuse(message: String)
    }

    /// What to do with a newcomer from `uid`; `holders` are in the order they connected, oldest first.
    public static func decide(newcomer uid: UInt32?, holders: [Holder], limits: ControlLimits) -> Decision {
        let mine = holders.filter { $0.uid == uid }
        if mine.count >= limits.perUID {
            let message = "This user (uid \(uid.map(String.init) ?? "unknown")) already holds \(limits.perUID) connections to the "
                + "satellite, its most. Close some (parlourctl watch in other windows, say) and try again."
            if let oldest = mine.first(where: \.idle) {
                return .admitEvicting(id: oldest.id, message: message + " This one had sent nothing, so it made room for a newer one.")
            }
            return .refuse(message: message)
        }
        if holders.count >= limits.total {
            let message = "The satellite already holds \(limits.total) control connections, its most. Try again in a moment."
            // Room is made on the uid with the most places, so one user's flood cannot push out another's.
            let idle = Dictionary(grouping: holders.filter(\.idle), by: \.uid).mapValues(\.count)
            if let most = idle.values.max(), let oldest = holders.first(where: { $0.idle && idle[$0.uid] == most }) {
                return .admitEvicting(id: oldest.id, message: message + " This one had sent nothing, so it made room for a newer one.")
            }
            return .refuse(message: message)
        }
        return .admit
    }

    /// The error for a connection that sent no complete line within `limits.idle`.
    public static func idleMessage(_ limits: ControlLimits) -> String {
        let ms = limits.idle.components.seconds * 1000 + limits.idle.components.attoseconds / 1_000_000_000_000_000
        let within = ms % 1000 == 0 ? "\(ms / 1000) s" : "\(ms) ms"
        return "No request arrived within \(within) of connecting, so the satellite closed the connection. "
            + "Send one JSON object a line, ending in a newline."
    }
}
