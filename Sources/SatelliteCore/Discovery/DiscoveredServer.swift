// A Parlour server as Bonjour describes it, and the address the satellite would
// use for it. Easy to get wrong: an IPv6 address in a URL needs brackets, and a
// link-local one needs its interface (the zone), whose `%` must be written `%25`
// in a URL (RFC 6874); and anything can advertise `_parlour._tcp`.

/// One `_parlour._tcp` service, resolved: what `parlourctl servers` lists.
///
/// A service seen on several interfaces or over IPv4 and IPv6 is one server with
/// several addresses (see `merged(with:)`); its `identity` is what stays the same.
public struct DiscoveredServer: Sendable, Equatable {
    /// What tells two advertisers apart: the instance name, host and port.
    public struct Identity: Sendable, Hashable, CustomStringConvertible {
        public var name: String
        public var host: String
        public var port: Int

        public init(name: String, host: String, port: Int) {
            self.name = name
            self.host = host
            self.port = port
        }

        public var description: String { "\(name) (\(host):\(port))" }
    }

    /// The Bonjour instance name, e.g. "Parlour on den".
    public var name: String
    /// The host name from the SRV record, without its trailing dot, e.g. "den.local".
    public var host: String
    public var port: Int
    /// IPv4 and IPv6 addresses, best first (see `preferenceOrder`). A link-local
    /// IPv6 address carries its interface as a zone: "fe80::1%eth0".
    public var addresses: [String]
    /// The TXT record; keys in lower case (DNS-SD keys ignore case).
    public var txt: [String: String]
    /// The network interface it was first seen on.
    public var interface: String

    public init(name: String, host: String, port: Int, addresses: [String], txt: [String: String], interface: String) {
        self.name = name
        self.host = host.hasSuffix(".") ? String(host.dropLast()) : host
        self.port = port
        self.addresses = Self.preferenceOrder(addresses)
        self.txt = txt
        self.interface = interface
    }

    public var identity: Identity { Identity(name: name, host: host, port: port) }

    /// False when the TXT record names another role (a phone, a satellite): those
    /// advertise `_parlour._tcp` too but are not servers. No role at all is a server.
    public var isServer: Bool {
        guard let role = txt["role"] else { return true }
        return role.lowercased() == "server"
    }

    /// Where requests would go. A host name with a dot (den.local) is used as it
    /// is, since it outlives address changes; otherwise the best address: IPv4,
    /// then a global IPv6, and a link-local IPv6 only when there is nothing else,
    /// with its zone written `%25` (RFC 6874), which ServerTarget reads back.
    public var url: String {
        if host.contains(".") || addresses.isEmpty { return "http://\(host):\(port)" }
        let address = addresses[0]
        guard address.contains(":") else { return "http://\(address):\(port)" }
        return "http://[\(address.split(separator: "%", omittingEmptySubsequences: false).joined(separator: "%25"))]:\(port)"
    }

    /// One entry of `parlourctl servers --json`; the pin marks the pinned one.
    public var json: JSONValue {
        ["name": .string(name), "url": .string(url), "host": .string(host), "port": .number(Double(port)),
         "addresses": .array(addresses.map(JSONValue.string)),
         "txt": .object(txt.mapValues(JSONValue.string)), "pinned": false]
    }

    /// The same server seen through another record: the addresses of both, best
    /// first; name, host, port, TXT and interface stay those of `self`.
    public func merged(with other: DiscoveredServer) -> DiscoveredServer {
        var result = self
        result.addresses = Self.preferenceOrder(addresses + other.addresses.filter { !addresses.contains($0) })
        return result
    }

    /// A TXT record's strings ("key=value", or a bare "key") as a dictionary.
    /// As RFC 6763 6.4 says: keys ignore case, the first of a repeated key wins,
    /// and a string that starts with "=" has no key and is ignored.
    public static func txtRecord(_ strings: [String]) -> [String: String] {
        var record: [String: String] = [:]
        for string in strings {
            let key: Substring, value: Substring
            if let equals = string.firstIndex(of: "=") {
                key = string[..<equals]
                value = string[string.index(after: equals)...]
            } else {
                key = string[...]
                value = ""
            }
            guard !key.isEmpty else { continue }
            let lower = key.lowercased()
            if record[lower] == nil { record[lower] = String(value) }
        }
        return record
    }

    /// IPv4 first, then global IPv6, then link-local IPv6; otherwise in the order given.
    public static func preferenceOrder(_ addresses: [String]) -> [String] {
        func rank(_ address: String) -> Int {
            if !address.contains(":") { return 0 }
            return isLinkLocalIPv6(address) ? 2 : 1
        }
        var seen = Set<String>()
        let unique = addresses.filter { seen.insert($0).inserted }
        return unique.enumerated().sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }.map(\.element)
    }

    /// Whether the text is an IPv6 address in fe80::/10, which needs a zone to be reached.
    public static func isLinkLocalIPv6(_ address: String) -> Bool {
        let lower = address.lowercased()
        return lower.contains(":") && ["fe8", "fe9", "fea", "feb"].contains { lower.hasPrefix($0) }
    }
}
