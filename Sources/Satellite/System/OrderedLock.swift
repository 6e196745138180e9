// A Mutex with a place in its owner's lock order: where two locks nest, the
// outer has the lower rank, and taking a lock while this thread holds one of
// the same or a higher rank traps in a debug build (the tests), before it can
// deadlock in a house; a release build only takes the lock. The rank this
// thread holds is kept in a thread-specific slot. Rank 1 is an outer lock
// (a capture device's life, a listen sink's route), rank 2 what is taken under
// one (the device's consumer and listeners, the /listen socket's queue).
import Glibc
import Synchronization

final class OrderedLock<Value: ~Copyable>: Sendable {
    private let mutex: Mutex<Value>
    private let rank: Int
    private let name: String

    /// `rank`: greater than that of every lock held while this one is taken.
    init(_ value: consuming sending Value, rank: Int, name: String) {
        mutex = Mutex(value)
        self.rank = rank
        self.name = name
    }

    func withLock<Result: ~Copyable, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        #if DEBUG
        let outer = LockRank.held
        assert(outer < rank, "\(name) (rank \(rank)) taken while holding a lock of rank \(outer): against the lock order")
        LockRank.held = rank
        defer { LockRank.held = outer }
        #endif
        return try mutex.withLock(body)
    }
}

#if DEBUG
/// The rank of the innermost ordered lock the calling thread holds (0: none).
private enum LockRank {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    static var held: Int {
        get { Int(bitPattern: pthread_getspecific(key)) }
        set { pthread_setspecific(key, UnsafeRawPointer(bitPattern: newValue)) }
    }
}
#endif
