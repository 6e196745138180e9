// The ownership checks themselves: a call off the owning thread, and a lock
// taken against its order, trap in a debug build (each in a child process of
// its own, swift-testing's exit tests); the right thread and the right order
// go through.
import Glibc
import Testing
@testable import Satellite

@Suite("ownership is checked, not only written")
struct OwnershipTests {
    @Test("the owner's thread passes; another thread traps")
    func ownerThread() async {
        let owner = OwnerThread("test")
        owner.claim()
        owner.assertCurrent()
        #expect(owner.isCurrent)
        await #expect(processExitsWith: .failure) {
            let owner = OwnerThread("test")
            owner.claim()
            await BlockingThread(name: "elsewhere").run { owner.assertCurrent() }
        }
    }

    @Test("a lock of a higher rank may be taken under a lower one; the other way traps")
    func lockOrder() async {
        let outer = OrderedLock(0, rank: 1, name: "outer")
        let inner = OrderedLock(0, rank: 2, name: "inner")
        let sum = outer.withLock { a in inner.withLock { b in a + b + 1 } }
        #expect(sum == 1)
        await #expect(processExitsWith: .failure) {
            let outer = OrderedLock(0, rank: 1, name: "outer")
            let inner = OrderedLock(0, rank: 2, name: "inner")
            inner.withLock { _ in outer.withLock { _ in } }
        }
        await #expect(processExitsWith: .failure) {
            let one = OrderedLock(0, rank: 2, name: "one")
            let other = OrderedLock(0, rank: 2, name: "other")
            one.withLock { _ in other.withLock { _ in } }
        }
    }
}
