// The server the satellite trusts and how it came to trust it, as kept in
// <state>/pin.json (INTERFACE.md). Easy to get wrong: the file is read at every
// start, so a broken one must be named with the way out (`parlourctl unpin`),
// and `configured` is never written there: the config says that, not the file.
// `tokenSource` says which of the token's places belongs to this server (never
// the token): a request carries that token or none (INTERFACE.md token rules).

/// A pinned server: only it gets a request or the token.
public struct Pin: Sendable, Equatable {
    public var url: String
    public var name: String
    public var how: PinHow
    public var pinnedAt: WallTime
    /// An https server's public key, `sha256/<base64>` (ServerKey): only a server showing it is sent anything.
    public var key: String?
    /// The addresses the server's name stood for when it was pinned: the only ones it is reached
    /// at (empty: the URL's host is an address itself, or nothing resolved it).
    public var addresses: [String] = []
    /// The Bonjour instance name that announced it, if one did: the only voice a move is heard from.
    public var instance: String?
    /// Where this server's token is read from; nil: this server gets no token (until `pair` or `token set`).
    public var tokenSource: TokenKind?

    public init(url: String, name: String, how: PinHow, pinnedAt: WallTime, key: String? = nil,
                tokenSource: TokenKind? = .state) {
        self.url = url
        self.name = name
        self.how = how
        self.pinnedAt = pinnedAt
        self.key = key
        self.tokenSource = tokenSource
    }

    /// Whether the pin says where the server is: its host is an address, or the pin holds the
    /// addresses its name stood for. A pin that does not would have its name looked up afresh for
    /// each request, and whoever answered for it then would be sent the token: it is sent none.
    public var isPlaced: Bool {
        !addresses.isEmpty || (ServerAddress(url).map { PinMoves.isAddress($0.host) } ?? false)
    }

    /// `{"how","name","pinnedAt","tokenSource","url"}`, with `pinnedAt` in ISO 8601 (UTC, whole
    /// seconds) and `tokenSource` `"credential"`, `"state"`, `"environment"` or null.
    public var json: JSONValue {
        var fields: [String: JSONValue] = ["url": .string(url), "name": .string(name), "how": .string(how.rawValue),
                                           "pinnedAt": .string(pinnedAt.iso8601),
                                           "tokenSource": .from(tokenSource?.rawValue)]
        if let key { fields["key"] = .string(key) }
        if !addresses.isEmpty { fields["addresses"] = .array(addresses.map(JSONValue.string)) }
        if let instance { fields["instance"] = .string(instance) }
        return .object(fields)
    }

    /// The bytes of pin.json: the JSON and a newline.
    public var fileData: [UInt8] { Array((json.text + "\n").utf8) }

    /// Reads pin.json. `file` is the path, for the error; other keys are ignored. A pin.json from before
    /// `tokenSource` was written has its token in the state folder, where pairing and `token set` put it.
    public static func decode(_ data: [UInt8], file: String) throws(PinFileError) -> Pin {
        let value: JSONValue
        do { value = try JSONValue.parse(data) } catch { throw PinFileError(file: file, problem: error.description) }
        guard let fields = value.objectValue else {
            throw PinFileError(file: file, problem: "it holds \(value.kindName), not an object")
        }

        func string(_ key: String) throws(PinFileError) -> String {
            guard let field = fields[key] else { throw PinFileError(file: file, problem: "\"\(key)\" is missing") }
            guard let text = field.stringValue else {
                throw PinFileError(file: file, problem: "\"\(key)\" should be a string, not \(field.kindName)")
            }
            return text
        }

        let url = try string("url")
        guard ServerAddress(url) != nil else {
            throw PinFileError(file: file, problem: "\"url\" is not an http or https address with a host")
        }
        let name = try string("name")
        let howText = try string("how")
        guard let how = PinHow(rawValue: howText), how != .configured else {
            throw PinFileError(file: file, problem: "\"how\" should be \"paired\", \"manual\" or \"discovered\"")
        }
        guard let pinnedAt = parseDate(try string("pinnedAt")) else {
            throw PinFileError(file: file, problem: "\"pinnedAt\" is not an ISO 8601 date and time")
        }
        var key: String?
        if fields["key"] != nil {
            key = try string("key")
            guard let key, ServerKey.isValid(key) else {
                throw PinFileError(file: file, problem: "\"key\" should be \"sha256/\" and the base64 of a SHA-256")
            }
        }
        var tokenSource: TokenKind? = .state
        switch fields["tokenSource"] {
        case nil: break
        case .null?: tokenSource = nil
        case let field?:
            guard let kind = field.stringValue.flatMap(TokenKind.init(rawValue:)) else {
                throw PinFileError(file: file, problem: "\"tokenSource\" should be \"credential\", \"state\", \"environment\" or null")
            }
            tokenSource = kind
        }
        var pin = Pin(url: url, name: name, how: how, pinnedAt: pinnedAt, key: key, tokenSource: tokenSource)
        if let list = fields["addresses"] {
            guard let items = list.arrayValue?.compactMap(\.stringValue), items.count == list.arrayValue?.count,
                  items.allSatisfy(PinMoves.isAddress) else {
                throw PinFileError(file: file, problem: "\"addresses\" should be a list of IP addresses")
            }
            pin.addresses = items
        }
        if fields["instance"] != nil { pin.instance = try string("instance") }
        return pin
    }

    /// ISO 8601 with or without fractional seconds, in UTC or with an offset.
    private static func parseDate(_ text: String) -> WallTime? { WallTime(iso8601: text) }
}

/// A pin.json that cannot be used: which file, what is wrong, and the way out.
public struct PinFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public let file: String
    /// What is wrong, such as `"url" is missing`.
    public let problem: String

    public init(file: String, problem: String) {
        self.file = file
        self.problem = problem
    }

    public var description: String {
        "The pinned server in \(file) cannot be read: \(problem). Until it is fixed no server is pinned; "
            + "run parlourctl unpin to remove it, or pair again with parlourctl pair LINK."
    }
}
