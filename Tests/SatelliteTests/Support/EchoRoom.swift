// A room with an echo (../shared/TESTING.md): the daemon's speaker writes into
// a FIFO, what it played goes through a real `sox` (reverb, and quieter) and
// comes back into the microphone's FIFO `delayMs` later, under whatever the
// test says into the room. Each answer's echo starts `delayMs` after its first
// sound (`inHandMs` at least), once the speaker has been quiet for 300 ms, and
// follows what sox gives back. ALSA's file plugin hands the FIFO what was
// written a buffer earlier, at the moment the daemon writes more, so a frame
// reaches the room up to a buffer after the card played it: the kept speaker,
// topped up half a buffer at a time while idle and a period at a time while a
// sound plays, gives its frames 0 to 80 ms late, and a loop that wakes late
// adds to that. The room holds the air's delay, and at least `inHandMs`, of
// echo in hand for it, as a card plays on from its buffer whatever its writer
// does. Echo that comes later still (the speaker gave nothing, or sox or this thread
// was late) grows the path by it, which for a speaker that paused is what a
// room does and for a late sox is not; the two cannot be told apart here, so
// the room counts it (with only the air's 100 ms in hand, server wake's later
// answer ran 448 samples short in three realtime passes, and fell to 14 to 20
// dB). A microphone's reader that is late finds what it missed waiting, up to
// the hold, as a card captures while its reader is late (dropped, it shortened
// the path: EchoModesTests saw a later answer fall to 8 dB after one such 20
// ms). Only what nobody reads is gone. What moved the path is counted
// (`glitches`). One thread of its own paces the room at 20 ms. Easy to get
// wrong: both FIFOs are held read-write and non-blocking, so neither the
// daemon's open nor a device closing ever blocks or kills anything; and sox is
// fed and read without blocking, its output taken as it comes.
import Foundation
import Glibc
import Synchronization
import TestSupport

final class EchoRoom: Sendable {
    let microphone: String
    let speaker: String
    private let state = Mutex(State())
    private let micFD: Int32
    private let speakerFD: Int32
    /// sox and its two pipes, kept until stop().
    private let sox: Mutex<(process: Process, input: Pipe, output: Pipe)>
    private let soxIn: Int32
    private let soxOut: Int32
    /// Samples of silence before each answer's echo: the air's path, and at least what is held in hand.
    private let delay: Int
    /// What the microphone's FIFO holds ahead of the reader (bytes): 320 ms unless told, more than
    /// MicFeeder's 200. ALSA's file plugin fills what a read of its infile comes short of with silence,
    /// and the ear reads two 120 ms periods at a time on the paced card: with 200 ms each answer's
    /// first seconds had gaps, which moved the echo against what was played (scripts/bench_echo.py's
    /// HOLD has the measurement). All of it is on the echo's path, which is about 260 ms more.
    private let hold: Int
    /// The same in milliseconds: what is written into the microphone is read about this much later.
    let holdMs: Int

    private struct State {
        var talker: [Int16] = []
        var echo: [Int16] = []
        var stopped = false
        /// Echo samples added to the room so far, in periods with sound (for the test to know the speaker was heard).
        var echoed = 0
        var echoing = false
        /// When sox last gave echo back.
        var heardAt = ContinuousClock.now
        /// The energy (sum of squares, full scale 1) of each 20 ms period written into the microphone, and when.
        var written: [(at: ContinuousClock.Instant, energy: Double)] = []
        /// What moved the echo's path, as a card on one clock never would: echo samples that were not
        /// back from sox in time (the path grew by them), periods not written because the reader was
        /// behind (it lost them), and writes that found the microphone's FIFO empty (its reader may have
        /// been given silence, and the path grew).
        var glitches = Glitches()
        /// Who waits for `echoed` to reach a count (`echoed(atLeast:)`).
        var waiting: [(count: Int, resume: CheckedContinuation<Void, Never>)] = []
    }

    struct Glitches: Sendable, CustomStringConvertible {
        var echoShort = 0, skipped = 0, empty = 0
        func since(_ before: Glitches) -> Glitches {
            Glitches(echoShort: echoShort - before.echoShort, skipped: skipped - before.skipped, empty: empty - before.empty)
        }
        /// Whether the path moved.
        var movesPath: Bool { echoShort > 0 || skipped > 0 || empty > 0 }
        var description: String { "echo short \(echoShort) samples, \(skipped) periods lost unread, FIFO found empty \(empty) times" }
    }

    /// What has moved the echo's path so far.
    var glitches: Glitches { state.withLock { $0.glitches } }

    /// The least echo held in hand for frames that reach the room late (above): past the speaker's
    /// buffer (160 ms) and a tick of this room's. No more, and not on top of the air's, as the whole
    /// path (with the microphone's hold, up to 320 ms) stays well within the 0.8 s the delay search looks
    /// at: with 200 ms on top of the air's, the daemon measured up to 767 ms, and a first delay found
    /// over little echo came later, so that the test server's stand-in wake heard an answer's echo.
    static let inHandMs = 200

    /// `gainDB` (negative: quieter) and sox's `reverb` as given, `delayMs` on top of sox's own.
    init(directory: String, delayMs: Int = 100, gainDB: Double = -12, reverb: [String] = ["40", "50", "60"],
         inverted: Bool = false, holdMs: Int = 320) throws {
        hold = holdMs * 32
        self.holdMs = holdMs
        microphone = directory + "/room-mic.fifo"
        speaker = directory + "/room-speaker.fifo"
        delay = max(delayMs, Self.inHandMs) * 16
        for path in [microphone, speaker] {
            guard mkfifo(path, 0o600) == 0 else { throw TestFailure("mkfifo \(path): \(String(cString: strerror(errno)))") }
        }
        micFD = open(microphone, O_RDWR | O_NONBLOCK)
        speakerFD = open(speaker, O_RDWR | O_NONBLOCK)
        guard micFD >= 0, speakerFD >= 0 else { throw TestFailure("open the room's FIFOs: \(String(cString: strerror(errno)))") }
        let raw = ["-t", "raw", "-r", "16000", "-e", "signed", "-b", "16", "-c", "1"]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sox")
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/sox") else {
            throw TestFailure("sox is not installed; these tests need it: apt-get install sox")
        }
        // An empty `reverb` is a dry room; `inverted`, a speaker or microphone wired the other way round.
        let effects = (reverb.isEmpty ? [] : ["reverb"] + reverb) + ["vol", "\((inverted ? -1 : 1) * pow(10, gainDB / 20))"]
        process.arguments = ["-q", "--buffer", "640"] + raw + ["-"] + raw + ["-"] + effects
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        TestChildren.tie(process)
        soxIn = input.fileHandleForWriting.fileDescriptor
        soxOut = output.fileHandleForReading.fileDescriptor
        _ = fcntl(soxOut, F_SETFL, fcntl(soxOut, F_GETFL) | O_NONBLOCK)
        sox = Mutex((process, input, output))
        let thread = Thread { [self] in self.pump() }
        thread.name = "echo-room"
        thread.start()
    }

    /// Says raw 16 kHz s16le `samples` into the room, after what is still being said.
    func say(_ samples: [Int16]) {
        state.withLock { $0.talker.append(contentsOf: samples) }
    }

    /// How many samples of echo have come back into the room so far, counting periods with sound only.
    var echoed: Int { state.withLock { $0.echoed } }

    /// The mean power (dBFS) of what went into the microphone between `from` and `to` (by when it was
    /// written), or nil when nothing was.
    func heardDBFS(from: ContinuousClock.Instant, to: ContinuousClock.Instant) -> Double? {
        let periods = state.withLock { $0.written.filter { $0.at >= from && $0.at < to } }
        guard !periods.isEmpty else { return nil }
        return 10 * log10(max(periods.reduce(0) { $0 + $1.energy } / Double(periods.count * 320), 1e-12))
    }

    /// Returns once `count` samples of echo have come back (or the room stopped).
    func echoed(atLeast count: Int) async {
        await withCheckedContinuation { (resume: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.echoed >= count || s.stopped { return true }
                s.waiting.append((count, resume))
                return false
            }
            if now { resume.resume() }
        }
    }

    func stop() {
        let waiting = state.withLock { s in
            s.stopped = true
            defer { s.waiting = [] }
            return s.waiting
        }
        for waiter in waiting { waiter.resume.resume() }
        sox.withLock { $0.process.terminate() }
    }

    private func pump() {
        defer {
            close(micFD)
            close(speakerFD)
        }
        var buffer = [UInt8](repeating: 0, count: 65536)
        var backlog: [UInt8] = []
        /// What the FIFO held after the last write, and when the reader was last seen to take from it.
        var left = 0
        var readAt = ContinuousClock.now - .seconds(1)
        var next = ContinuousClock.now
        while !state.withLock({ $0.stopped }) {
            // What the speaker played goes to sox; what sox gives back is the echo.
            let played = buffer.withUnsafeMutableBytes { read(speakerFD, $0.baseAddress, $0.count) }
            if played > 0 { _ = buffer.withUnsafeBytes { write(soxIn, $0.baseAddress, played) } }
            let back = buffer.withUnsafeMutableBytes { read(soxOut, $0.baseAddress, $0.count) }
            if back > 1 {
                let samples = buffer.withUnsafeBytes { Array($0.bindMemory(to: Int16.self).prefix(back / 2)) }
                state.withLock { s in
                    // The echo starts `delay` after the first sound: the path through the air.
                    if !s.echoing { s.echo.append(contentsOf: repeatElement(0, count: delay)); s.echoing = true }
                    s.echo.append(contentsOf: samples)
                    s.heardAt = .now
                }
            } else {
                state.withLock { s in
                    // The speaker has stopped: the next answer's echo starts afresh.
                    if s.echoing, s.echo.isEmpty, ContinuousClock.now - s.heardAt > .milliseconds(300) { s.echoing = false }
                }
            }
            let (period, reached): ([Int16], [CheckedContinuation<Void, Never>]) = state.withLock { s in
                var out = [Int16](repeating: 0, count: 320)
                let talker = min(320, s.talker.count), echo = min(320, s.echo.count)
                if s.echoing { s.glitches.echoShort += 320 - echo }
                for i in 0..<talker { out[i] = s.talker[i] }
                for i in 0..<echo { out[i] = Int16(clamping: Int(out[i]) + Int(s.echo[i])) }
                // Only what sounds counts: a speaker kept open plays silence between answers, which comes
                // back from sox as its dither (a least significant bit or two).
                if s.echo[0..<echo].contains(where: { abs(Int($0)) > 8 }) { s.echoed += echo }
                s.talker.removeFirst(talker)
                s.echo.removeFirst(echo)
                let echoed = s.echoed
                let reached = s.waiting.filter { $0.count <= echoed }.map(\.resume)
                s.waiting.removeAll { $0.count <= echoed }
                return (out, reached)
            }
            for waiter in reached { waiter.resume() }
            // A reader that is late finds what it missed waiting, up to the hold, as a card captures
            // while its reader is late: the path holds. A reader gone for longer than the hold (the
            // microphone closed, or far behind) finds only the hold: the rest is lost.
            let energy = period.reduce(0.0) { $0 + Double($1) * Double($1) } / (32768.0 * 32768.0)
            state.withLock { $0.written.append((.now, energy)) }
            period.withUnsafeBytes { backlog.append(contentsOf: $0) }
            var queued: Int32 = 0
            _ = ioctl(micFD, UInt(FIONREAD), &queued)
            if queued == 0 { state.withLock { $0.glitches.empty += 1 } }
            if Int(queued) < left { readAt = .now }
            let room = min(backlog.count, hold - Int(queued)) & ~1
            left = Int(queued)
            if room > 0 {
                let wrote = backlog.withUnsafeBytes { write(micFD, $0.baseAddress, room) }
                if wrote > 0 {
                    backlog.removeFirst(wrote)
                    left += wrote
                }
            }
            if !backlog.isEmpty, ContinuousClock.now - readAt > .milliseconds(holdMs) {
                state.withLock { $0.glitches.skipped += (backlog.count + 639) / 640 }
                backlog.removeAll()
            }
            next += .milliseconds(20)
            let wait = next - ContinuousClock.now
            if wait > .zero { usleep(UInt32(wait.components.attoseconds / 1_000_000_000_000)) }
        }
    }
}
