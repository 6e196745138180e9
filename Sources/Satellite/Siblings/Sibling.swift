// A sibling as the house's Bonjour shows it: another satellite advertising
// `_parlour-satellite._udp` with this house's identifier. Claims go to its
// addresses; its name is the one it claims under (Bonjour's, after any rename).

/// Another satellite of this house, as resolved from its Bonjour record.
public struct Sibling: Sendable, Equatable, Hashable {
    /// Its Bonjour instance name, which is also the name in its claims.
    public var name: String
    /// Its `room` TXT entry ("" when none).
    public var room: String
    /// Numeric addresses it was resolved to (IPv4, or IPv6 with `%scope` when link-local).
    public var addresses: [String]
    /// The UDP port its claims are read on.
    public var port: UInt16

    public init(name: String, room: String, addresses: [String], port: UInt16) {
        self.name = name
        self.room = room
        self.addresses = addresses
        self.port = port
    }
}

/// What Bonjour knows now of this satellite's siblings (SiblingDirectory).
public protocol SiblingRoster: Sendable {
    /// The siblings seen now: the same house, not this satellite.
    func siblings() async -> [Sibling]
    /// The name this satellite is advertised under (Bonjour renames on a clash), once advertised.
    func advertisedName() async -> String?
}
