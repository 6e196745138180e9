// Writes what happened where an admin reads it: native journald records (with
// the PARLOUR_* fields people filter on) when stderr is the journal, else one
// plain line per record on stderr. It is a subscriber of the event bus, so it
// says exactly what status says, and writes on a thread of its own, so a
// journal that stops reading stops nothing else. Nothing here ever sees the token.
import Glibc
import CSystemd
import SatelliteCore

/// One journal record: a fixed message with its data beside it.
public struct JournalRecord: Sendable, Equatable {
    public var priority: Priority
    public var message: String
    /// Field names without the PARLOUR_ prefix, e.g. "EVENT", "STATE", "ROOM".
    public var fields: [String: String]

    public init(_ priority: Priority, _ message: String, fields: [String: String] = [:]) {
        self.priority = priority
        self.message = message
        self.fields = fields
    }
}

/// Where records go: journald or stderr.
public struct Journal: Sendable {
    public static let identifier = "parlour-satellite"
    public let native: Bool

    /// Native when JOURNAL_STREAM names the file that stderr is (systemd sets it so).
    public init(environment: [String: String] = ProcessEnvironment.variables) {
        native = Journal.stderrIsJournal(environment["JOURNAL_STREAM"])
    }

    static func stderrIsJournal(_ value: String?) -> Bool {
        guard let value else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let dev = UInt64(parts[0]), let ino = UInt64(parts[1]) else { return false }
        var st = stat()
        guard fstat(2, &st) == 0 else { return false }
        return UInt64(st.st_dev) == dev && UInt64(st.st_ino) == ino
    }

    public func write(_ record: JournalRecord) {
        if native, sendNative(record) { return }
        // A server's or Bonjour's words in a message could otherwise forge a line of their own.
        var line = "\(record.priority.word): \(record.message.shown)"
        for key in record.fields.keys.sorted() where key != "EVENT" {
            line += " \(key.lowercased().shown)=\(Journal.quoted(record.fields[key]!.shown))"
        }
        line += "\n"
        _ = Array(line.utf8).withUnsafeBytes { try? POSIX.writeAll(2, $0) }
    }

    private func sendNative(_ record: JournalRecord) -> Bool {
        var entries = [
            "MESSAGE=\(record.message)",
            "PRIORITY=\(record.priority.rawValue)",
            "SYSLOG_IDENTIFIER=\(Journal.identifier)",
        ]
        for (key, value) in record.fields { entries.append("PARLOUR_\(Journal.fieldName(key))=\(value)") }
        let buffers = entries.map { Array($0.utf8) }
        return buffers.withUnsafeIOVecs { iov in sd_journal_sendv(iov.baseAddress, Int32(iov.count)) } >= 0
    }

    /// journald takes upper-case letters, digits and underscores only.
    static func fieldName(_ key: String) -> String {
        String(key.uppercased().unicodeScalars.map { ("A"..."Z").contains($0) || ("0"..."9").contains($0) ? Character($0) : "_" })
    }

    static func quoted(_ value: String) -> String {
        value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) || value.isEmpty ? JSONValue.string(value).text : value
    }

    /// The record for an event, with the state and room it happened in.
    public static func record(for event: SatelliteEvent, state: SatelliteState, room: String) -> JournalRecord {
        var fields = ["EVENT": event.name, "STATE": state.rawValue, "ROOM": room]
        switch event {
        case .microphone(let d), .speaker(let d): fields["DEVICE"] = d.device
        case .server(let s): if let url = s.url { fields["SERVER_URL"] = url }
        case .wake(let model, let probability):
            fields["MODEL"] = model
            fields["PROBABILITY"] = String(printf: "%.3f", probability)
        case .wakeWord(let w): fields["MODEL"] = w.model
        case .arbitration(let won, let winner, let claims):
            fields["WON"] = won ? "true" : "false"
            fields["WINNER"] = winner.name
            fields["WINNER_ROOM"] = winner.room
            fields["LEVEL"] = String(printf: "%.2f", winner.levelDb)
            fields["CLAIMS"] = String(claims.count)
        case .finished(let command, let result):
            fields["COMMAND"] = command
            if case .error(let e) = result {
                fields["ERROR"] = e.code.rawValue
                // "satellite": the satellite spoke a notice of its own; nothing came from home.
                if let via = e.via { fields["VIA"] = via }
            }
            if case .cancelled(let r) = result { fields["REASON"] = r.rawValue }
        case .notice(_, _, let extra): for (k, v) in extra { fields[fieldName(k)] = v }
        default: break
        }
        return JournalRecord(event.priority, event.message, fields: fields)
    }

    /// Writes every event until the stream ends, on a thread of its own (`BlockingThread.journal`): a
    /// journald or a stderr that stops reading holds up that thread, never the main loop, where this
    /// runs with every actor. Returns once every record taken is written.
    public func run(_ events: AsyncStream<SatelliteEvent>, room: String) async {
        let backlog = Backlog(limit: 1000)
        var state = SatelliteState.starting
        var room = room
        for await event in events {
            if case .state(let s, _) = event { state = s }
            if case .room(let r) = event { room = r }
            guard backlog.admit() else { continue }
            let record = Journal.record(for: event, state: state, room: room)
            BlockingThread.journal.submit { [self] in
                write(record)
                if let dropped = backlog.written() {
                    write(JournalRecord(.warning, "\(dropped) records were dropped: the journal (or stderr) did not take them "
                        + "as fast as they came.", fields: ["EVENT": "journal", "DROPPED": String(dropped)]))
                }
            }
        }
        await BlockingThread.journal.run {}
    }
}

extension Array where Element == [UInt8] {
    /// Calls `body` with an iovec per buffer, valid only inside `body`.
    func withUnsafeIOVecs<R>(_ body: (UnsafeBufferPointer<iovec>) -> R) -> R {
        var pointers: [UnsafeMutableRawPointer] = []
        defer { pointers.forEach { $0.deallocate() } }
        var vecs: [iovec] = []
        for buffer in self {
            let p = UnsafeMutableRawPointer.allocate(byteCount: Swift.max(buffer.count, 1), alignment: 1)
            buffer.withUnsafeBytes { p.copyMemory(from: $0.baseAddress!, byteCount: buffer.count) }
            pointers.append(p)
            vecs.append(iovec(iov_base: p, iov_len: buffer.count))
        }
        return vecs.withUnsafeBufferPointer(body)
    }
}
