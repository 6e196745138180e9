// The socket URL made from the pinned server URL: the scheme, the path and the
// query the server reads, with names and rooms a person might type, and the
// token nowhere in it.
import SatelliteCore
import Testing

@Suite("the /listen socket URL")
struct ListenURLTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let server: String
        let client: String
        let room: String
        let mode: ListenMode
        let expected: String
        var testDescription: String { "\(server) \(client) \(room) \(mode) → \(expected)" }
    }

    static let cases: [Case] = [
        Case(server: "http://den.local:8765", client: "kitchen", room: "Kitchen", mode: .wake,
             expected: "ws://den.local:8765/listen?client=kitchen&room=Kitchen&mode=wake"),
        Case(server: "https://parlour.example.org", client: "kitchen", room: "", mode: .push,
             expected: "wss://parlour.example.org/listen?client=kitchen&mode=push"),
        Case(server: "HTTP://10.0.0.2:8765", client: "a", room: "", mode: .wake,
             expected: "ws://10.0.0.2:8765/listen?client=a&mode=wake"),
        Case(server: "http://[::1]:8765", client: "a", room: "", mode: .wake,
             expected: "ws://[::1]:8765/listen?client=a&mode=wake"),
        Case(server: "http://den.local:8765/", client: "a", room: "", mode: .wake,
             expected: "ws://den.local:8765/listen?client=a&mode=wake"),
        Case(server: "http://den.local:8765/old/path?x=1#f", client: "a", room: "", mode: .push,
             expected: "ws://den.local:8765/listen?client=a&mode=push"),
        Case(server: "http://h:1", client: "living room", room: "Living Room", mode: .wake,
             expected: "ws://h:1/listen?client=living%20room&room=Living%20Room&mode=wake"),
        Case(server: "http://h:1", client: "a+b", room: "R&D=1?#/", mode: .wake,
             expected: "ws://h:1/listen?client=a%2Bb&room=R%26D%3D1%3F%23%2F&mode=wake"),
        Case(server: "http://h:1", client: "küche", room: "Küche ☕", mode: .wake,
             expected: "ws://h:1/listen?client=k%C3%BCche&room=K%C3%BCche%20%E2%98%95&mode=wake"),
        Case(server: "http://h:1", client: "id_1.2~x-y", room: "%", mode: .push,
             expected: "ws://h:1/listen?client=id_1.2~x-y&room=%25&mode=push"),
    ]

    @Test("the server URL becomes the socket URL the server reads", arguments: cases)
    func builds(_ item: Case) throws {
        let url = try ListenURL.build(server: item.server, client: item.client, room: item.room, mode: item.mode)
        #expect(url == item.expected)
        #expect(!url.contains("token"))
    }

    @Test("a server URL a socket cannot be made from is refused, saying why", arguments: [
        ("den.local:8765", "has no scheme"),
        ("ftp://den.local", "is not http or https"),
        ("ws://den.local:8765", "is not http or https"),
        ("http://", "has no host"),
        ("http:///listen", "has no host"),
        ("http://:8765", "has no host"),
        ("http://user:secret@den.local:8765", "has a user name in it"),
    ])
    func refuses(_ server: String, _ why: String) {
        #expect {
            try ListenURL.build(server: server, client: "a", room: "", mode: .wake)
        } throws: { error in
            (error as? ListenURLError)?.description.contains(why) == true
        }
    }
}
