// One line of `parlourctl doctor`: what was checked, how it went, what was
// found and the command that fixes it, the way the Parlour app lists each
// permission with a mark and a way to grant it. Names and their order are part
// of the interface (scripts grep for them), so they live in one closed list.

/// One check of `doctor` and its outcome.
public struct DoctorCheck: Sendable, Equatable {
    /// Every check, in the order doctor runs and prints them.
    public enum Name: String, Sendable, CaseIterable {
        case microphone
        case speaker
        case audioGroup = "audio_group"
        case avahi
        case serverSeen = "server_seen"
        case serverPinned = "server_pinned"
        case token
        case clock
        case stateFolder = "state_folder"
        case socket
        /// With `wake` `local` only.
        case wakeWordLibrary = "wake_word_library"
        case wakeWordModel = "wake_word_model"
        /// With `arbitration.enabled` only.
        case arbitrationPort = "arbitration_port"
        case siblingClaims = "sibling_claims"
    }

    public enum Status: String, Sendable, CaseIterable {
        case ok, warn, fail
    }

    public let name: Name
    public let status: Status
    /// What was found, in a sentence or two.
    public let detail: String
    /// The command that fixes it (a `#` comment may follow it); nil when the check is ok.
    public let fix: String?

    public init(_ name: Name, _ status: Status, _ detail: String, fix: String? = nil) {
        self.name = name
        self.status = status
        self.detail = detail
        self.fix = status == .ok ? nil : fix
    }

    public var json: JSONValue {
        ["name": .string(name.rawValue), "status": .string(status.rawValue), "detail": .string(detail), "fix": .from(fix)]
    }

    /// Reads a check back; nil when it is not one (a name or status this build does not know).
    public init?(json: JSONValue) {
        guard let name = json["name"]?.stringValue.flatMap(Name.init(rawValue:)),
              let status = json["status"]?.stringValue.flatMap(Status.init(rawValue:)),
              let detail = json["detail"]?.stringValue else { return nil }
        self.init(name, status, detail, fix: json["fix"]?.stringValue)
    }
}
