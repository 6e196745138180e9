// A change to the server's pipeline: only the settings asked for, each checked
// against the server's bounds before anything is sent, and then cut down to
// what really differs from the saved pipeline, so a save never writes a value
// into the server's config.json that was already there (as the app does).

/// The settings to change, with their values as the server takes them.
public struct PipelineChange: Sendable, Equatable {
    public private(set) var values: [PipelineSetting: JSONValue] = [:]

    public init() {}

    public var isEmpty: Bool { values.isEmpty }

    /// Sets one value, or refuses it (nil) when it is outside the server's bounds.
    public mutating func set(_ setting: PipelineSetting, _ value: JSONValue) -> Bool {
        guard let checked = setting.check(value) else { return false }
        values[setting] = checked
        return true
    }

    /// Only the settings whose value differs from `saved`.
    public func changes(from saved: Pipeline) -> PipelineChange {
        var changed = PipelineChange()
        changed.values = values.filter { saved.value(of: $0.key) != $0.value }
        return changed
    }

    /// The body of `POST /admin/pipeline`, and the fields of the socket request.
    public var fields: [String: JSONValue] {
        Dictionary(uniqueKeysWithValues: values.map { ($0.key.key, $0.value) })
    }

    /// "concurrency 3, timeout 60 s", in the table's order.
    public var sentence: String {
        values.keys.sorted().map { "\($0.label) \($0.describe(values[$0]!))" }.joined(separator: ", ")
    }

    /// Reads the socket request's fields: at least one setting, each within the server's bounds.
    public static func decode(_ fields: [String: JSONValue]) -> Result<PipelineChange, SatelliteError> {
        var change = PipelineChange()
        for setting in PipelineSetting.allCases {
            guard let value = fields[setting.key], !value.isNull else { continue }
            guard change.set(setting, value) else {
                return .failure(SatelliteError(.invalidRequest,
                    "\"\(setting.key)\" must be \(setting.expected) (the server's bounds), not \(value.text)."))
            }
        }
        guard !change.isEmpty else {
            return .failure(SatelliteError(.invalidRequest,
                "server pipeline needs at least one of " + PipelineSetting.allCases.map { "\"\($0.key)\"" }.joined(separator: ", ") + "."))
        }
        return .success(change)
    }
}
