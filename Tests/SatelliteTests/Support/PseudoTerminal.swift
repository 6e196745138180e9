// parlourctl on a real pseudo-terminal, typed at like a person would: Python's
// pty module (Tests/Fixtures/pty_session.py, run by the test venv's python)
// waits for each text and types each answer, and returns everything the
// terminal showed. Echo is real, so what a program hides is really hidden.
import Foundation
import SatelliteCore

enum PseudoTerminal {
    enum Step {
        /// Wait until this text shows, after the last one waited for.
        case expect(String)
        /// Type this.
        case send(String)
    }

    struct Session {
        /// The program's exit code.
        let status: Int
        /// Everything the terminal showed, with \r\n line ends.
        let transcript: String
        /// Why the script did not run to its end (a text that never showed), nil when it did.
        let error: String?
    }

    /// Runs `parlourctl ARGUMENTS` on a terminal through `steps`, then to its end.
    static func parlourctl(_ arguments: [String], steps: [Step], environment: [String: String]) async throws -> Session {
        let script: [JSONValue] = steps.map { step in
            switch step {
            case .expect(let text): ["expect": .string(text)]
            case .send(let text): ["send": .string(text)]
            }
        }
        let runner = Package.root.appendingPathComponent("Tests/Fixtures/pty_session.py").path
        var environment = environment
        environment["LANG"] = "C.UTF-8"
        environment.removeValue(forKey: "LC_ALL")
        let done = try await Subprocess.run(Package.python, [runner, JSONValue.array(script).text, "--",
                                                             Package.binDirectory + "/parlourctl"] + arguments,
                                            environment: environment)
        guard let out = try? JSONValue.parse(done.out) else {
            throw TestFailure("pty_session.py said no JSON (status \(done.status)): \(done.out) \(done.err)")
        }
        return Session(status: out["status"]?.intValue ?? -1, transcript: out["transcript"]?.stringValue ?? "",
                       error: out["error"]?.stringValue)
    }
}
