// The server's pipeline settings, as GET /admin shows them twice: the ones in
// force and the ones saved in config.json, which differ until the agent
// restarts. Read strictly, because a change is worked out against them.

/// The pipeline's settings (`pipeline` and `saved` in `GET /admin`).
public struct Pipeline: Sendable, Equatable {
    public var concurrency: Int
    public var queueDepth: Int
    public var maxTasks: Int
    public var timeoutMs: Int
    public var triage: String

    public init(concurrency: Int, queueDepth: Int, maxTasks: Int, timeoutMs: Int, triage: String) {
        self.concurrency = concurrency
        self.queueDepth = queueDepth
        self.maxTasks = maxTasks
        self.timeoutMs = timeoutMs
        self.triage = triage
    }

    public func value(of setting: PipelineSetting) -> JSONValue {
        switch setting {
        case .concurrency: .number(Double(concurrency))
        case .queueDepth: .number(Double(queueDepth))
        case .maxTasks: .number(Double(maxTasks))
        case .timeoutMs: .number(Double(timeoutMs))
        case .triage: .string(triage)
        }
    }

    public var json: JSONValue {
        .object(Dictionary(uniqueKeysWithValues: PipelineSetting.allCases.map { ($0.key, value(of: $0)) }))
    }

    /// One line a person reads: "concurrency 2, queue depth 2, max tasks 3, timeout 45 s, triage auto".
    public var sentence: String {
        PipelineSetting.allCases.map { "\($0.label) \($0.describe(value(of: $0)))" }.joined(separator: ", ")
    }

    package static func read(_ answer: AnswerReader) throws(SatelliteError) -> Pipeline {
        Pipeline(concurrency: try answer.int("concurrency"), queueDepth: try answer.int("queueDepth"),
                 maxTasks: try answer.int("maxTasks"), timeoutMs: try answer.int("timeoutMs"), triage: try answer.string("triage"))
    }
}
