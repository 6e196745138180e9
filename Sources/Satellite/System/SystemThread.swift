// A thread of our own, for the blocking C calls kept off the main loop (MainLoop)
// (ALSA and the /listen socket, the HTTP loop, the control socket's poll
// loop, the blocking calls): what Foundation's Thread did, without Foundation,
// which the daemon no longer links (FoundationEssentials has no Thread). Its name reaches the kernel, so `top -H` and /proc say which is which.
import Glibc

enum SystemThread {
    /// Runs `body` on a new, detached thread named `name` (/proc shows its first 15 bytes).
    /// `stackSize` 0 keeps the system's default. False when no thread could be made.
    @discardableResult
    static func start(name: String, stackSize: Int = 0, _ body: @escaping @Sendable () -> Void) -> Bool {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        if stackSize > 0 { pthread_attr_setstacksize(&attributes, stackSize) }
        let work = Unmanaged.passRetained(Work(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, &attributes, { raw in
            let work = Unmanaged<Work>.fromOpaque(raw!).takeRetainedValue()
            SystemThread.nameCurrent(work.name)
            work.body()
            return nil
        }, work)
        if created != 0 { Unmanaged<Work>.fromOpaque(work).release() }
        return created == 0
    }

    private final class Work {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }

    /// pthread_setname_np is a GNU extension Swift does not see; the kernel takes the same name here.
    static func nameCurrent(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = Array(name.utf8.prefix(15)).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }
}
