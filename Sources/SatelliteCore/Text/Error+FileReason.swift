// Why a file could not be read, in the system's words ("Permission denied"), for
// the config and the cue sounds. Foundation's NSError gave this as its localized
// failure reason; FoundationEssentials, which the daemon links alone, has no
// NSError, but its CocoaError carries the errno.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc

extension Error {
    /// The system's text for the errno under a file error, else the error as it prints.
    public var fileReason: String {
        guard let posix = (self as? CocoaError)?.underlying as? POSIXError else { return "\(self)" }
        return String(cString: strerror(posix.code.rawValue))
    }
}
