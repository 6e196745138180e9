// Why a file could not be read, in the system's words ("Permission denied"), for
// the config and the cue sounds: FileSystem's failures carry their errno.
import Glibc

extension Error {
    /// The system's text for the errno under a file error, else the error as it prints.
    public var fileReason: String {
        (self as? FileSystem.Failure)?.description ?? "\(self)"
    }
}
