// Everything one daemon's watch shows, kept in order, so that a test running
// several satellites at once can await a condition over all of it (a turn
// over, a decision lost) instead of reading one event at a time. The status
// a watch begins with counts as the first state. The log ends when the daemon
// goes (killed, stopped), and a wait then sees `ended`.
import Foundation
import Synchronization
import SatelliteCore

final class WatchLog: Sendable {
    typealias Condition = @Sendable (_ events: [JSONValue], _ ended: Bool) -> Bool

    private let client: SocketClient
    private let state = Mutex(State())

    private struct State {
        var events: [JSONValue] = []
        var ended = false
        var waiters: [UUID: (from: Int, condition: Condition, continuation: CheckedContinuation<Bool, Never>)] = [:]
    }

    /// Watches `daemon`, once the watch is known to be live.
    static func start(_ daemon: DaemonHarness) async throws -> WatchLog {
        let client = try SocketClient(path: daemon.socket)
        let status = await client.watch()
        let log = WatchLog(client: client)
        if let now = status?["status"]?["state"] { log.append(["event": "state", "state": now]) }
        Task { await log.read() }
        return log
    }

    private init(client: SocketClient) { self.client = client }

    private func read() async {
        for await line in client.lines {
            if let event = try? JSONValue.parse(line) { append(event) }
        }
        let waiting = state.withLock { s in
            s.ended = true
            defer { s.waiters.removeAll() }
            return s.waiters.values.map { ($0.continuation, $0.condition(Array(s.events[$0.from...]), true)) }
        }
        for (continuation, met) in waiting { continuation.resume(returning: met) }
    }

    private func append(_ event: JSONValue) {
        let ready = state.withLock { s -> [CheckedContinuation<Bool, Never>] in
            s.events.append(event)
            let met = s.waiters.filter { $0.value.condition(Array(s.events[$0.value.from...]), false) }
            for key in met.keys { s.waiters.removeValue(forKey: key) }
            return met.values.map(\.continuation)
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// How many events have come so far: a mark for `since` and `wait`.
    var count: Int { state.withLock { $0.events.count } }

    var ended: Bool { state.withLock { $0.ended } }

    /// The events from `mark` on.
    func since(_ mark: Int) -> [JSONValue] { state.withLock { Array($0.events[min(mark, $0.events.count)...]) } }

    /// The state the daemon last said it was in.
    var currentState: String? {
        state.withLock { $0.events.last { $0["event"] == "state" }?["state"]?.stringValue }
    }

    /// Waits until `condition` holds for the events from `mark` on (checked as each comes, and once more
    /// with `ended` when the watch ends); false when it never did, or after `seconds`, which only keeps a
    /// broken daemon from hanging the test.
    func wait(from mark: Int, seconds: Double = 60, until condition: @escaping Condition) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.waitUntil(from: mark, condition) }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    private func waitUntil(from mark: Int, _ condition: @escaping Condition) async -> Bool {
        let id = UUID()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = state.withLock { s -> Bool? in
                    let events = Array(s.events[min(mark, s.events.count)...])
                    if condition(events, s.ended) { return true }
                    if s.ended || Task.isCancelled { return false }
                    s.waiters[id] = (mark, condition, continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(returning: false)
        }
    }
}
