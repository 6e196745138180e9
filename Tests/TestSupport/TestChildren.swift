// A test's long-lived child, tied to the test process: if that goes without
// stopping it (a crash), the watcher Tests/TestEnvironment/children.c forked
// kills it and its process group.
import Foundation
import TestEnvironment

public enum TestChildren {
    /// Ties `process`, which runs now, to the test process.
    public static func tie(_ process: Process) {
        parlour_test_child_started(process.processIdentifier)
    }
}
