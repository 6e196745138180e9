// Every system call the satellite makes by hand goes through here: EINTR is
// retried, and a failure becomes an error that names the call and errno, for
// the journal. (swift-nio's rule, kept small.)
import Glibc

/// A failed system call: which one, and errno.
public struct POSIXFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public let function: String
    public let errno: Int32

    public init(_ function: String, errno: Int32) {
        self.function = function
        self.errno = errno
    }

    public var reason: String { String(cString: strerror(errno)) }
    public var description: String { "\(function): \(reason)" }
}

enum POSIX {
    /// Runs `call` until it does not fail with EINTR; a negative result throws.
    @discardableResult
    static func call<T: BinaryInteger>(_ name: String, _ call: () -> T) throws(POSIXFailure) -> T {
        while true {
            let result = call()
            if result >= 0 { return result }
            let code = errno
            if code == EINTR { continue }
            throw POSIXFailure(name, errno: code)
        }
    }

    /// Writes all of `bytes` to a blocking descriptor.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(POSIXFailure) {
        var offset = 0
        while offset < bytes.count {
            let n = try call("write") { write(fd, bytes.baseAddress! + offset, bytes.count - offset) }
            offset += n
        }
    }
}
