// WATCHDOG=1 for systemd, sent only while every long-lived thread turns
// (Heartbeat). It runs on a thread of its own, so the main loop is watched like
// the others: every half of the interval systemd asked for it reads each
// heartbeat; while all are within their bounds WATCHDOG=1 goes, and when one is
// not, the journal says once which thread, for how long and what stops with it,
// and nothing goes: systemd then kills the daemon and starts it again. It
// writes and notifies itself, not through the journal's or the notify thread,
// which are among those it watches.
import CSystemd
import Glibc

enum Watchdog {
    /// Starts the watchdog's thread, which runs as long as the process.
    static func start(interval: Duration, journal: Journal) {
        SystemThread.start(name: "watchdog") { run(every: interval / 2, journal: journal) }
    }

    private static func run(every period: Duration, journal: Journal) {
        var stuck: [ObjectIdentifier: Heartbeat] = [:]
        var sent = 0
        while true {
            let now = MonotonicClock.nanoseconds()
            var healthy = true
            for heartbeat in Heartbeat.threads {
                let id = ObjectIdentifier(heartbeat)
                if let since = heartbeat.late(at: now) {
                    healthy = false
                    guard stuck.updateValue(heartbeat, forKey: id) == nil else { continue }
                    say(journal, JournalRecord(.error, "The \(heartbeat.name) thread has not turned for \(seconds(since)) s, "
                        + "longer than the \(seconds(heartbeat.bound)) s it may: it is stuck in a call, and \(heartbeat.serves) with it. "
                        + "WATCHDOG=1 stops, so systemd restarts the daemon.", fields: ["EVENT": "watchdog", "THREAD": heartbeat.name]),
                        status: "The \(heartbeat.name) thread is stuck; systemd restarts the daemon.")
                } else if stuck.removeValue(forKey: id) != nil {
                    say(journal, JournalRecord(.warning, "The \(heartbeat.name) thread turns again.",
                                               fields: ["EVENT": "watchdog", "THREAD": heartbeat.name]),
                        status: "The \(heartbeat.name) thread turns again.")
                }
            }
            if healthy {
                _ = sd_notify(0, "WATCHDOG=1")
                sent += 1
                if sent == 3 { Heartbeat.armStall() }
            }
            sleep(for: period)
        }
    }

    private static func say(_ journal: Journal, _ record: JournalRecord, status: String) {
        journal.write(record)
        _ = sd_notify(0, "STATUS=\(status)")
    }

    private static func seconds(_ duration: Duration) -> String {
        String(printf: "%.1f", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }

    private static func sleep(for duration: Duration) {
        let nanoseconds = MonotonicClock.nanoseconds(in: duration)
        var request = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        var rest = timespec()
        while clock_nanosleep(CLOCK_MONOTONIC, 0, &request, &rest) == EINTR { request = rest }
    }
}
