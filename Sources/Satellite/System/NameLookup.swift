// The addresses a host name stands for now, by getaddrinfo (nss: /etc/hosts,
// DNS, mDNS with libnss-mdns), at pinning, and before a request to a host
// nobody pinned (HTTPClient hands curl the answer, so curl starts no resolver
// thread of its own): after pinning the server is reached at the addresses
// recorded then (PinMoves). getaddrinfo blocks, so it runs on BlockingThread.lookups.
import Glibc

enum NameLookup {
    /// The numeric addresses of `host`, in the resolver's order; empty when it does not resolve.
    static func addresses(of host: String) async -> [String] {
        await BlockingThread.lookups.run { lookup(host) }
    }

    private static func lookup(_ host: String) -> [String] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var found: [String] = []
        var entry = list
        while let item = entry {
            var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(item.pointee.ai_addr, item.pointee.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 {
                let address = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if !found.contains(address) { found.append(address) }
            }
            entry = item.pointee.ai_next
        }
        return found
    }
}
