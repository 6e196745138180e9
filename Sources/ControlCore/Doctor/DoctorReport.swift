// The whole answer of `doctor` and how parlourctl prints it: one line a check
// with a mark, what was found, and a `fix:` line under anything not ok. The
// request always completes (the checks ran); the exit code says whether any
// failed, so a script can run `parlourctl doctor || ...`.

/// The checks of one `doctor` run, in `DoctorCheck.Name` order.
public struct DoctorReport: Sendable, Equatable {
    public var checks: [DoctorCheck]

    public init(_ checks: [DoctorCheck]) {
        self.checks = checks
    }

    public var json: JSONValue { ["checks": .array(checks.map(\.json))] }

    /// Reads the `doctor` response; checks this build does not know are left out.
    public init(json: JSONValue) {
        checks = (json["checks"]?.arrayValue ?? []).compactMap(DoctorCheck.init(json:))
    }

    /// 1 when any check failed, else 0 (warnings do not fail).
    public var exitCode: Int32 { checks.contains { $0.status == .fail } ? 1 : 0 }

    /// The marks: ✓ ! ✗, or + ! x where the terminal may not show UTF-8.
    public static func mark(_ status: DoctorCheck.Status, plain: Bool) -> String {
        switch status {
        case .ok: plain ? "+" : "✓"
        case .warn: "!"
        case .fail: plain ? "x" : "✗"
        }
    }

    /// What parlourctl prints.
    public func text(plain: Bool) -> String {
        let width = (DoctorCheck.Name.allCases.map(\.rawValue.count).max() ?? 0) + 2
        func padded(_ name: String) -> String { name + String(repeating: " ", count: max(1, width - name.count)) }
        var out = ""
        for check in checks {
            // A detail may quote a server's or Bonjour's words: shown escaped, so it cannot forge a line.
            out += "\(Self.mark(check.status, plain: plain)) \(padded(check.name.rawValue))\(check.detail.shown)\n"
            if let fix = check.fix { out += "  \(String(repeating: " ", count: width))fix: \(fix.shown)\n" }
        }
        let failed = checks.filter { $0.status == .fail }.count
        let warned = checks.filter { $0.status == .warn }.count
        func count(_ n: Int, _ one: String, _ many: String) -> String { "\(n) \(n == 1 ? one : many)" }
        out += "\n" + [count(failed, "failed", "failed"), count(warned, "warning", "warnings"),
                       count(checks.count - failed - warned, "ok", "ok")].joined(separator: ", ") + ".\n"
        return out
    }
}
