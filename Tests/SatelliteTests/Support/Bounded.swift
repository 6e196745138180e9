// A wait that, when what it awaits never comes, fails naming it and showing
// what the daemons said, rather than leaving a suite's time limit to say only
// that something somewhere did not come. The bound is a hang's, far past any
// wait that succeeds, and asserts nothing about speed.
import Testing

enum Bounded {
    /// `body`'s value, or nil and an issue naming `what` (with `said`'s text) once `seconds` pass first;
    /// `body` is then cancelled, which ends a wait on a stream.
    static func wait<T: Sendable>(_ what: String, seconds: Int = 60, said: @escaping @Sendable () -> String = { "" },
                                  _ body: @escaping @Sendable () async throws -> T?) async throws -> T? {
        let outcome = try await withThrowingTaskGroup(of: Outcome<T>.self) { group in
            group.addTask { .came(try await body()) }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                // Recorded here, not after the group: a wait that ignores cancelling would hold the group open.
                Issue.record("waited \(seconds) s for \(what), which never came\n\(said())")
                return .timedOut
            }
            defer { group.cancelAll() }
            return try await group.next() ?? .timedOut
        }
        if case .came(let value) = outcome { return value }
        return nil
    }
}

private enum Outcome<T: Sendable>: Sendable {
    case came(T?)
    case timedOut
}
