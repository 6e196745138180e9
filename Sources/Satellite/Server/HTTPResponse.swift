// The values that go into and come out of HTTPClient: a request, its answer,
// and the failure when there is no answer. Easy to get wrong: a request's
// headers hold the token, so neither its description nor a failure may print
// them, and URLs are shown without their query.
import SatelliteCore

/// One HTTP exchange to make.
public struct HTTPRequest: Sendable, CustomStringConvertible, CustomReflectable {
    public var method: String
    public var url: String
    /// Name and value pairs, sent in this order.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]?
    /// How long to wait for the connection, name lookup included.
    public var connectTimeout: Duration
    /// How long the whole exchange may take.
    public var totalTimeout: Duration
    /// https only: the public key (`sha256/<base64>`) the server must show. It proves the server,
    /// so the certificate need not be vouched for by an authority; another key sends nothing.
    public var pinnedKey: String?
    /// https only: bring back the key the server shows (`HTTPResponse.serverKey`); with
    /// `verifyPeer` false, also from a certificate nobody vouches for.
    public var wantsKey = false
    public var verifyPeer = true
    /// The addresses the URL's host must be reached at (pinned at pairing), and no others, tried
    /// in order, so the name is never looked up afresh. Empty: resolve as usual.
    public var addresses: [String] = []

    public init(
        method: String, url: String, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil,
        connectTimeout: Duration = .seconds(5), totalTimeout: Duration = .seconds(20), pinnedKey: String? = nil
    ) {
        self.pinnedKey = pinnedKey
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
    }

    /// The method and the URL without its query; header values stay out, as they may hold the token.
    public var description: String { "\(method) \(ServerAnswers.displayURL(url))" }

    public var customMirror: Mirror {
        Mirror(self, children: ["method": method, "url": ServerAnswers.displayURL(url), "headers": headers.map(\.name)])
    }
}

/// Any HTTP answer, whatever its status: 3xx, 4xx and 5xx are answers too.
public struct HTTPResponse: Sendable, Equatable {
    public let status: Int
    public let contentType: String?
    public let body: [UInt8]
    /// Where a 3xx answer points (its Location header as sent; Redirect resolves a relative one), never followed.
    public let location: String?
    /// With `wantsKey`: the server's public key, `sha256/<base64>`.
    public var serverKey: String?

    public init(status: Int, contentType: String?, body: [UInt8], location: String? = nil) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.location = location
    }
}

/// A request that got no complete answer, with the step that failed for the log.
public struct HTTPFailure: Error, Sendable, CustomStringConvertible {
    public let kind: TransferFailure
    /// The step that failed: `getaddrinfo`, `connect`, `tls`, `read`, `answer`, `url`, `headers`, `cancel`, or curl's function.
    public let function: String
    /// An error number where there is one, else 0.
    public let code: Int
    /// What went wrong, in words (never a header's value).
    public let detail: String
    public let method: String
    /// The URL without its query.
    public let url: String
    /// https only, when the certificate's check failed: OpenSSL's verify result (X509_V_ERR_*, from
    /// CURLINFO_SSL_VERIFYRESULT), which tells a certificate not yet valid (a clock not yet set) from a wrong one.
    public let verifyResult: Int?

    public init(kind: TransferFailure, function: String, code: Int, detail: String, method: String, url: String,
                verifyResult: Int? = nil) {
        self.verifyResult = verifyResult
        self.kind = kind
        self.function = function
        self.code = code
        self.detail = detail
        self.method = method
        self.url = url
    }

    public var description: String { "\(method) \(url): \(function) failed (\(detail))" }
}
