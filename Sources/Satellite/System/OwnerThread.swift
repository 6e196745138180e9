// The one thread that owns what no lock guards (the audio thread's devices and
// sockets, the control loop's slots, Avahi's client), checked as swift-nio's
// `assertInEventLoop()` checks its loop: the owner records its thread as it
// starts, and the owned code asserts that it runs there. The assertion is
// Swift's `assert`: it traps in debug builds and the tests, and a release
// build does not even evaluate it.
import Glibc
import Synchronization

final class OwnerThread: Sendable {
    /// What the thread is called, for the assertion's message.
    let name: String
    /// pthread_self() of the owner; 0 until it claims.
    private let thread = Atomic<UInt>(0)

    init(_ name: String) { self.name = name }

    /// From now on the calling thread is the owner.
    func claim() { thread.store(UInt(pthread_self()), ordering: .releasing) }

    /// Whether the caller is the owner.
    var isCurrent: Bool {
        let owner = thread.load(ordering: .acquiring)
        return owner != 0 && pthread_equal(pthread_t(owner), pthread_self()) != 0
    }

    /// Traps in a debug build unless the caller is the owner.
    func assertCurrent(file: StaticString = #fileID, line: UInt = #line) {
        assert(isCurrent, "called off the \(name) thread, which owns this", file: file, line: line)
    }
}
