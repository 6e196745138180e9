// The audio thread. One thread drives every open PCM, the microphone's and the
// speaker's, polling them together (snd_pcm_poll_descriptors, and a pipe that
// wakes it for commands), so a captured period is handed on in the
// wake-up that read it and the speaker is written when it asks for a period:
// one wake-up per period while streaming, none while nothing is open. The
// /listen socket is polled here too (AudioEngineSocket), serviced after the
// PCMs, so a period a sink queued goes into the kernel in its wake-up. The
// blocking snd_pcm_open runs here too (`run`), never on the main loop.
// Both sides are serviced in one loop on one clock; that is where the echo
// reference is taken (what playback wrote, with its delay, beside what capture
// read, with its delay) and the microphone's audio processed (EchoCanceller). Easy to get wrong: once attached, a handle is
// touched by this thread alone; nothing here waits on a device, so a side that
// underruns or overruns is recovered without stalling the other.
import CALSA
import Glibc
import SatelliteCore
import Synchronization

/// A PCM the engine drives. Its methods are called on the audio thread only.
protocol AudioEngineSide: AnyObject {
    /// The PCM polled while `polls` is true.
    var handle: OpaquePointer { get }
    /// Whether its descriptors are polled now (a speaker waiting out its last periods is not).
    var polls: Bool { get }
    /// When it wants servicing even if its PCM says nothing (CLOCK_MONOTONIC ns), or nil.
    var deadline: UInt64? { get }
    /// Once, when attached; false when it ended already (it has closed its PCM).
    func begin() -> Bool
    /// After every wake-up, with what poll said of its PCM (0 when it said nothing); false once it
    /// has ended (it has closed its PCM) and is let go.
    func service(revents: UInt16, now: UInt64) -> Bool
}

/// A speaker as the echo canceller knows it: what it writes is the echo's reference.
protocol SpeakerOutput: AnyObject {
    var device: String { get }
    var rate: Int { get }
    var channels: Int { get }
}

/// A socket the engine polls beside the PCMs: the /listen connection (WebSocketClient), so a
/// period the microphone gave is written into it in the same wake-up. Called on the audio thread only.
/// `periodic`, in each call: a PCM is polled, so the thread wakes every period anyway, and what can
/// wait a period (a keepalive ping, reading its pong) rides on those wake-ups instead of its own.
protocol AudioEngineSocket: AnyObject {
    /// The descriptor and the events wanted now; nil when it has nothing to poll.
    func pollRequest(periodic: Bool) -> pollfd?
    /// When it wants servicing even if its descriptor says nothing (CLOCK_MONOTONIC ns), or nil.
    func socketDeadline(periodic: Bool) -> UInt64?
    /// After every wake-up, after the PCMs, with what poll said of its descriptor (0 when it
    /// said nothing); false once it has ended (it has closed its descriptor) and is let go.
    func service(socketEvents: Int16, now: UInt64, periodic: Bool) -> Bool
}

/// The one thread that owns the open PCMs and polls them together.
public final class AudioEngine: @unchecked Sendable {
    /// The process's audio thread: the microphone and the speaker meet here.
    public static let shared = AudioEngine()

    /// A byte written wakes the thread.
    private let wakePipe: WakePipe
    /// Work for the thread, and whether the thread runs yet (it starts with the first work).
    private let inbox = Mutex<(jobs: [@Sendable () -> Void], running: Bool)>(([], false))
    /// The PCMs being driven. The audio thread's alone.
    private var sides: [any AudioEngineSide] = []
    /// The sockets being driven. The audio thread's alone.
    private var sockets: [any AudioEngineSocket] = []
    /// The audio thread, once it runs: what it owns asserts it is called there, and a socket
    /// written from it needs no wake-up.
    let owner = OwnerThread("audio")
    /// The microphone's processing, nil when it is all off. The audio thread's alone.
    private var processor: EchoCanceller?
    /// Whether the processor cancels the echo now (not off, not switched off for two cards).
    private let cancelling = Atomic<Bool>(false)

    public init() {
        guard let pipe = WakePipe() else { preconditionFailure("pipe failed: \(errno)") }
        wakePipe = pipe
    }

    /// Runs `job` on the audio thread, before its next poll.
    func perform(_ job: @escaping @Sendable () -> Void) {
        let start = inbox.withLock { inbox in
            inbox.jobs.append(job)
            defer { inbox.running = true }
            return !inbox.running
        }
        if start {
            let started = SystemThread.start(name: "audio") { [self] in loop() }
            precondition(started, "the audio thread could not be started")
        } else {
            wakeUp()
        }
    }

    /// Runs blocking `work` (opening a PCM) on the audio thread and returns what it returned.
    func run<T: Sendable>(_ work: @escaping @Sendable () throws(ALSAError) -> T) async throws(ALSAError) -> T {
        let result: Result<T, ALSAError> = await withCheckedContinuation { done in
            perform { done.resume(returning: Result { () throws(ALSAError) in try work() }) }
        }
        return try result.get()
    }

    /// Drives `side` from the next wake-up until its `service` says it ended.
    func attach(_ side: any AudioEngineSide & Sendable) {
        perform { [self] in
            if side.begin() { sides.append(side) }
        }
    }

    /// Drives `socket` from the next wake-up until its `service` says it ended.
    func attach(socket: any AudioEngineSocket & Sendable) {
        perform { [self] in sockets.append(socket) }
    }

    /// Whether the caller is the audio thread.
    var isCurrent: Bool { owner.isCurrent }

    /// Processes what the microphone hears from its next period on (nothing, when all is off);
    /// `notice` is told on the audio thread of a delay measured or the canceller switched off (and, at
    /// debug, of every estimate and every side placed afresh on the echo's timeline).
    /// `card` names the sound card a PCM is on (ALSA's, but for a test: there is no kernel sound card
    /// in the test's container, so two cards are named so).
    public func process(_ processing: AudioProcessing, card: @escaping @Sendable (OpaquePointer) -> Int32 = EchoCanceller.card(of:),
                        notice: @escaping @Sendable (Priority, String, [String: String]) -> Void) {
        // Said at once, for the devices opened next (the microphone and the speaker kept open); the
        // thread corrects it if the processing cannot start.
        cancelling.store(processing.echoCancel, ordering: .releasing)
        perform { [self] in
            processor = EchoCanceller(processing, card: card, notice: notice)
            updateCancelling()
        }
    }

    /// Whether the echo is cancelled now: what Playback asks before it chooses a speaker.
    public var cancelsEcho: Bool { cancelling.load(ordering: .acquiring) }

    private func updateCancelling() {
        cancelling.store(processor?.wantsReference ?? false, ordering: .releasing)
    }

    // The sides tell the processor what they do; on the audio thread.
    func speakerOpened(_ speaker: any SpeakerOutput, pcm: OpaquePointer) {
        owner.assertCurrent()
        processor?.speakerOpened(speaker, pcm: pcm)
        updateCancelling()
    }

    func speakerRewound(_ frames: Int, by speaker: any SpeakerOutput) {
        owner.assertCurrent()
        processor?.rewound(frames, rate: speaker.rate)
    }

    func speakerWrote(_ samples: UnsafeBufferPointer<Int16>, frames: Int, by speaker: any SpeakerOutput, pcm: OpaquePointer) {
        owner.assertCurrent()
        guard let processor, processor.wantsPlayed else { return }
        processor.played(samples, frames: frames, by: speaker, pcm: pcm, now: MonotonicClock.nanoseconds())
    }

    func microphoneOpened(_ device: String, pcm: OpaquePointer) {
        owner.assertCurrent()
        processor?.microphoneOpened(device, pcm: pcm)
        updateCancelling()
    }

    func microphoneRead(_ chunk: inout [Int16], pcm: OpaquePointer) {
        owner.assertCurrent()
        processor?.heard(&chunk, pcm: pcm, now: MonotonicClock.nanoseconds())
    }

    /// Wakes the thread, so a side sees a stop or a cancel now rather than at its next period.
    func wakeUp() { wakePipe.wake() }

    private func loop() {
        owner.claim()
        var fds: [pollfd] = []
        var counts: [Int] = []
        let heartbeat = Heartbeat("audio", serves: "the microphone, the speaker and the /listen socket",
                                  bound: .seconds(10)) { [wakePipe] in wakePipe.wake() }
        while true {
            for job in inbox.withLock({ inbox in defer { inbox.jobs.removeAll() }; return inbox.jobs }) { job() }
            fds.removeAll(keepingCapacity: true)
            counts.removeAll(keepingCapacity: true)
            fds.append(wakePipe.pollRequest)
            var timeout: Int32 = -1
            let before = MonotonicClock.nanoseconds()
            /// The poll wakes by `deadline` (CLOCK_MONOTONIC ns) at the latest, rounded up to a millisecond.
            func wake(by deadline: UInt64?) {
                guard let deadline else { return }
                let ms = MonotonicClock.pollTimeout(until: deadline, from: before)
                timeout = timeout < 0 ? ms : min(timeout, ms)
            }
            let periodic = sides.contains { $0.polls }
            for side in sides {
                let count = side.polls ? max(0, Int(snd_pcm_poll_descriptors_count(side.handle))) : 0
                if count > 0 {
                    let at = fds.count
                    fds.append(contentsOf: repeatElement(pollfd(), count: count))
                    let filled = fds.withUnsafeMutableBufferPointer { all in
                        snd_pcm_poll_descriptors(side.handle, all.baseAddress! + at, UInt32(count))
                    }
                    if filled != Int32(count) { fds.removeLast(count) }
                    counts.append(filled == Int32(count) ? count : 0)
                } else {
                    counts.append(0)
                }
                wake(by: side.deadline)
            }
            let socketsAt = fds.count
            for socket in sockets {
                // Always one entry a socket, so its revents are found by position; -1 is not polled.
                fds.append(socket.pollRequest(periodic: periodic) ?? pollfd(fd: -1, events: 0, revents: 0))
                wake(by: socket.socketDeadline(periodic: periodic))
            }
            _ = heartbeat.sleeping(timeout: timeout) { poll(&fds, nfds_t(fds.count), timeout) }
            if fds[0].revents != 0 { wakePipe.drain() }
            let now = MonotonicClock.nanoseconds()
            var index = 1
            var kept: [any AudioEngineSide] = []
            kept.reserveCapacity(sides.count)
            for (position, side) in sides.enumerated() {
                let count = counts[position]
                var revents: UInt16 = 0
                if count > 0 {
                    fds.withUnsafeMutableBufferPointer { all in
                        _ = snd_pcm_poll_descriptors_revents(side.handle, all.baseAddress! + index, UInt32(count), &revents)
                    }
                }
                index += count
                if side.service(revents: revents, now: now) { kept.append(side) }
            }
            sides = kept
            // After the PCMs: what the microphone's sinks queued in this wake-up is written in it.
            var socketsKept: [any AudioEngineSocket] = []
            for (position, socket) in sockets.enumerated() where socket.service(socketEvents: fds[socketsAt + position].revents, now: now, periodic: periodic) {
                socketsKept.append(socket)
            }
            sockets = socketsKept
        }
    }
}
