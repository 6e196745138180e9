// `watch` on a daemon's control socket, for tests that await what the daemon
// says (a pin, a newcomer, Bonjour coming and going) instead of sleeping.
// Easy to get wrong: the daemon subscribes when it handles the request, so
// `start` waits for the status line a watch begins with.
import Foundation
import SatelliteCore

struct Watcher: Sendable {
    let client: SocketClient

    /// Watches `daemon`, and returns once the watch is known to be live.
    static func start(_ daemon: DaemonHarness) async throws -> Watcher {
        let client = try SocketClient(path: daemon.socket)
        await client.watch()
        return Watcher(client: client)
    }

    /// The next notice whose message contains every one of `parts`.
    func notice(_ parts: String...) async -> JSONValue? {
        await client.next { event in
            guard event["event"] == "notice", let message = event["message"]?.stringValue else { return false }
            return parts.allSatisfy { message.contains($0) }
        }
    }

    /// The next server event that matches.
    func server(_ match: @escaping (JSONValue) -> Bool) async -> JSONValue? {
        await client.next { $0["event"] == "server" && ($0["server"].map(match) ?? false) }
    }
}
