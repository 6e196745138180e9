// The five pipeline settings a client may change, with the bounds the server
// holds them to (PipelinePatch in the server's admin.ts; parlour-protocol.md
// 1.5). Kept in one table so parlourctl refuses the same values the daemon and
// the server would, before anything is sent. Easy to get wrong: the server
// takes the timeout in milliseconds, a person types seconds.

/// One setting of `POST /admin/pipeline`.
public enum PipelineSetting: String, Sendable, CaseIterable, Hashable, Comparable {
    case concurrency
    case queueDepth
    case maxTasks
    case timeoutMs
    case triage

    /// The server's key, as in `config.json` and the socket request.
    public var key: String { rawValue }

    /// parlourctl's option.
    public var option: String {
        switch self {
        case .concurrency: "--concurrency"
        case .queueDepth: "--queue-depth"
        case .maxTasks: "--max-tasks"
        case .timeoutMs: "--timeout"
        case .triage: "--triage"
        }
    }

    /// What a person reads for it, such as "queue depth".
    public var label: String {
        switch self {
        case .concurrency: "concurrency"
        case .queueDepth: "queue depth"
        case .maxTasks: "max tasks"
        case .timeoutMs: "timeout"
        case .triage: "triage"
        }
    }

    /// The server's bounds, in the server's unit; nil for triage, which is a word.
    public var bounds: ClosedRange<Int>? {
        switch self {
        case .concurrency: 1...4
        case .queueDepth: 1...10
        case .maxTasks: 1...10
        case .timeoutMs: 5000...300_000
        case .triage: nil
        }
    }

    public static let triageValues = ["auto", "always", "never"]

    public static func < (a: PipelineSetting, b: PipelineSetting) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }

    /// The value as the server takes it, or nil when `value` is outside the server's bounds.
    public func check(_ value: JSONValue) -> JSONValue? {
        if self == .triage {
            guard let word = value.stringValue, Self.triageValues.contains(word) else { return nil }
            return value
        }
        guard let number = value.intValue, bounds?.contains(number) == true else { return nil }
        return .number(Double(number))
    }

    /// What the socket request must hold, for a refusal.
    public var expected: String {
        switch self {
        case .triage: "auto, always or never"
        case .timeoutMs: "a whole number of milliseconds from 5000 to 300000"
        default: "a whole number from \(bounds!.lowerBound) to \(bounds!.upperBound)"
        }
    }

    /// parlourctl's option value as the server takes it (seconds become milliseconds), or nil when
    /// it is outside the server's bounds.
    public func parse(option text: String) -> JSONValue? {
        if self == .triage { return check(.string(text)) }
        // Far outside every bound, and too large to turn into milliseconds safely.
        guard let number = Int(text), abs(number) < 1_000_000_000 else { return nil }
        return check(.number(Double(self == .timeoutMs ? number * 1000 : number)))
    }

    /// What parlourctl's option takes, for a usage error.
    public var expectedOption: String {
        switch self {
        case .triage: "auto, always or never"
        case .timeoutMs: "a whole number of seconds from 5 to 300"
        default: expected
        }
    }

    /// A value as a person reads it: "45 s" for the timeout.
    public func describe(_ value: JSONValue) -> String {
        switch self {
        case .triage: value.stringValue ?? value.text
        case .timeoutMs: value.intValue.map { $0 % 1000 == 0 ? "\($0 / 1000) s" : "\(Double($0) / 1000) s" } ?? value.text
        default: value.intValue.map(String.init) ?? value.text
        }
    }
}
