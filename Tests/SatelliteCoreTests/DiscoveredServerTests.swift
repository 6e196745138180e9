import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("discovered servers")
struct DiscoveredServerTests {
    private static func server(host: String = "den.local.", addresses: [String] = ["198.51.100.1"],
                               txt: [String: String] = ["role": "server"]) -> DiscoveredServer {
        DiscoveredServer(name: "Parlour on den", host: host, port: 8765, addresses: addresses, txt: txt, interface: "eth0")
    }

    @Test("the url uses a dotted host name, else the best address, bracketed and zoned for IPv6", arguments: [
        ("den.local.", ["198.51.100.1"], "http://den.local:8765"),
        ("den.example.com", ["fe80::1%eth0"], "http://den.example.com:8765"),
        ("den", ["198.51.100.1"], "http://198.51.100.1:8765"),
        ("den", ["2001:db8::1"], "http://[2001:db8::1]:8765"),
        ("den", ["fe80::1%eth0"], "http://[fe80::1%25eth0]:8765"),
        ("den", ["fe80::1%eth0", "2001:db8::1", "198.51.100.1"], "http://198.51.100.1:8765"),
        ("den", ["fe80::1%eth0", "2001:db8::1"], "http://[2001:db8::1]:8765"),
        ("den", [], "http://den:8765"),
    ])
    func url(host: String, addresses: [String], url: String) {
        #expect(Self.server(host: host, addresses: addresses).url == url)
    }

    @Test("the host name loses its trailing dot")
    func trailingDot() {
        #expect(Self.server(host: "den.local.").host == "den.local")
        #expect(Self.server(host: "den.local").host == "den.local")
    }

    @Test("only a missing role or role server counts as a server", arguments: [
        ([:], true), (["role": "server"], true), (["role": "Server"], true),
        (["role": "phone"], false), (["role": "satellite"], false), (["role": ""], false),
    ] as [([String: String], Bool)])
    func isServer(txt: [String: String], expected: Bool) {
        #expect(Self.server(txt: txt).isServer == expected)
    }

    @Test("TXT strings become a record as RFC 6763 reads them", arguments: [
        (["role=server", "version=1", "token=required", "api=/v1"], ["role": "server", "version": "1", "token": "required", "api": "/v1"]),
        (["Role=server"], ["role": "server"]),
        (["role=server", "role=phone"], ["role": "server"]),
        (["flag"], ["flag": ""]),
        (["empty="], ["empty": ""]),
        (["=nokey", "a=b=c"], ["a": "b=c"]),
        ([], [:]),
    ] as [([String], [String: String])])
    func txtRecord(strings: [String], record: [String: String]) {
        #expect(DiscoveredServer.txtRecord(strings) == record)
    }

    @Test("addresses are ordered IPv4, then global IPv6, then link-local, without repeats")
    func preferenceOrder() {
        let ordered = DiscoveredServer.preferenceOrder(["fe80::2%eth0", "2001:db8::1", "10.0.0.2", "fe80::2%eth0", "10.0.0.1"])
        #expect(ordered == ["10.0.0.2", "10.0.0.1", "2001:db8::1", "fe80::2%eth0"])
    }

    @Test("one server seen through two records merges its addresses and keeps its identity")
    func merge() {
        let v6 = Self.server(addresses: ["2001:db8::1"])
        let v4 = Self.server(addresses: ["198.51.100.1"])
        let merged = v6.merged(with: v4).merged(with: v4)
        #expect(merged.addresses == ["198.51.100.1", "2001:db8::1"])
        #expect(merged.identity == v4.identity)
        #expect(merged.identity.description == "Parlour on den (den.local:8765)")
    }

    @Test("the identity tells advertisers apart by name, host and port")
    func identity() {
        let a = Self.server()
        var b = a
        b.port = 8766
        var c = a
        c.addresses = ["10.0.0.9"]
        #expect(a.identity != b.identity)
        #expect(a.identity == c.identity)
    }

    @Test("servers --json lists every field, not pinned")
    func json() {
        let server = Self.server(addresses: ["198.51.100.1", "2001:db8::1"], txt: ["role": "server", "api": "/v1"])
        #expect(server.json.text
            == #"{"addresses":["198.51.100.1","2001:db8::1"],"host":"den.local","name":"Parlour on den","pinned":false,"port":8765,"txt":{"api":"/v1","role":"server"},"url":"http://den.local:8765"}"#)
    }
}
