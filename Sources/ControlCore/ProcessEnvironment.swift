// What ProcessInfo told a program about its process (the environment, the
// user's name), from Glibc: neither parlourctl nor the daemon links Foundation.
import Glibc

public enum ProcessEnvironment {
    /// The environment variables, the first of a repeated name winning (as getenv does).
    public static var variables: [String: String] {
        var out: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "="), out[String(text[..<equals])] == nil {
                out[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return out
    }

    /// The name of the user parlourctl runs as, nil when the user database has none.
    public static var userName: String? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(geteuid(), &entry, &buffer, buffer.count, &found) == 0, found != nil, let name = entry.pw_name else {
            return nil
        }
        return String(cString: name)
    }
}
