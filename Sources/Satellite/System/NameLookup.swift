// The addresses a host name stands for now, by getaddrinfo (nss: /etc/hosts,
// DNS, mDNS with libnss-mdns), at pinning, and before a request to a host
// nobody pinned (HTTPClient hands the answer to the request, so the HTTP
// thread never waits on DNS): after pinning the server is reached at the addresses
// recorded then (PinMoves); and before the /listen socket connects
// (WebSocketClient). getaddrinfo blocks, so it runs on BlockingThread.lookups.
import Glibc

enum NameLookup {
    /// The numeric addresses of `host`, in the resolver's order; empty when it does not resolve.
    static func addresses(of host: String) async -> [String] {
        await BlockingThread.lookups.run { lookup(host) }
    }

    private static func lookup(_ host: String) -> [String] {
        var found: [String] = []
        for address in resolve(host, port: 0, numeric: false) where !address.text.isEmpty && !found.contains(address.text) {
            found.append(address.text)
        }
        return found
    }

    /// An address to connect to, and its numeric text.
    struct Address {
        var storage = sockaddr_storage()
        var length: socklen_t = 0
        var family: Int32 = 0
        var text = ""
    }

    /// The addresses `host` stands for, in the resolver's order, each with `port`; with `numeric`,
    /// only if `host` is an address already (no look-up at all then). Blocks: on BlockingThread.lookups.
    static func resolve(_ host: String, port: Int, numeric: Bool) -> [Address] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | (numeric ? AI_NUMERICHOST : 0)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var found: [Address] = []
        var entry = list
        while let item = entry {
            var address = Address()
            address.family = item.pointee.ai_family
            address.length = item.pointee.ai_addrlen
            withUnsafeMutableBytes(of: &address.storage) { storage in
                storage.copyMemory(from: UnsafeRawBufferPointer(start: item.pointee.ai_addr, count: Int(item.pointee.ai_addrlen)))
            }
            if let at = item.pointee.ai_addr { address.text = text(of: at, length: item.pointee.ai_addrlen) }
            found.append(address)
            entry = item.pointee.ai_next
        }
        return found
    }

    /// An address as numeric text (getnameinfo's NI_NUMERICHOST: "10.0.0.2", "2001:db8::2"), empty if it cannot be written.
    static func text(of address: UnsafePointer<sockaddr>, length: socklen_t) -> String {
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(address, length, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 else { return "" }
        return String(cBuffer: text)
    }
}
