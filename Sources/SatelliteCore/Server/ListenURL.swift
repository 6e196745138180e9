// The address of the /listen socket, made from the pinned server URL. Easy to
// get wrong: a room with a space or a `+` must arrive as written (the server
// reads `+` as a space), and the token stays out of the URL: it goes in the
// handshake's Authorization header, so no log of URLs can ever hold it.

/// Whether the server listens for the wake word or waits for `start`.
public enum ListenMode: String, Sendable, CaseIterable {
    /// Stream the room; the server's wake word and endpointer decide.
    case wake
    /// Only what lies between `start` and `end` is heard.
    case push
}

public enum ListenURL {
    /// The socket URL for a server URL (`http(s)://host[:port]`): `ws` for `http`, `wss` for
    /// `https`, path `/listen`, and `client`, `room` (left out when empty) and `mode` as query.
    /// Any path, query or fragment of the server URL is dropped.
    public static func build(server: String, client: String, room: String, mode: ListenMode) throws(ListenURLError) -> String {
        guard let schemeEnd = server.range(ofText: "://") else {
            throw ListenURLError("the server URL \"\(server)\" has no scheme; it should look like http://host:8765")
        }
        let scheme: String
        switch server[..<schemeEnd.lowerBound].lowercased() {
        case "http": scheme = "ws"
        case "https": scheme = "wss"
        default: throw ListenURLError("the server URL \"\(server)\" is not http or https")
        }
        let rest = server[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.isEmpty, !authority.hasPrefix(":") else {
            throw ListenURLError("the server URL \"\(server)\" has no host")
        }
        guard !authority.contains("@") else {
            throw ListenURLError("the server URL \"\(server)\" has a user name in it; the token is set apart, not in the URL")
        }
        var query = [("client", client)]
        if !room.isEmpty { query.append(("room", room)) }
        query.append(("mode", mode.rawValue))
        let encoded = query.map { "\($0)=\(percentEncoded($1))" }.joined(separator: "&")
        return "\(scheme)://\(authority)/listen?\(encoded)"
    }

    /// Encodes every byte but the URI unreserved set, as `encodeURIComponent` does for
    /// anything a name or room holds: a space is `%20` and a `+` is `%2B`, never left bare.
    /// The HTTP routes' queries use it too.
    public static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out += "%"
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 0xF)])
            }
        }
        return out
    }
}

/// A server URL that no socket URL can be made from, saying why.
public struct ListenURLError: Error, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
