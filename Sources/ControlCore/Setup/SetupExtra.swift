// The rows of setup's Extras step. An optional choice that a later issue adds
// (the spoken notice when the house cannot be reached, say) is one row here:
// its title, how to read its value from `status`, and either the question and
// the request that change it, or where it is changed instead.

/// One optional choice in setup's Extras step.
public struct SetupExtra: Sendable {
    /// How the choice is made.
    public enum Change: Sendable {
        /// Not from setup: the sentence says where (a config key, say).
        case elsewhere(String)
        /// Asked here: `prompt` is shown with the current value as the default (Enter keeps it);
        /// `request` turns an answer into the request to send, or into an error whose message says what is wrong.
        case ask(prompt: String, request: @Sendable (String) -> Result<JSONValue, SatelliteError>)
    }

    public let title: String
    /// What it is now, read from the `status` response.
    public let current: @Sendable (JSONValue) -> String
    public let change: Change

    public init(title: String, current: @escaping @Sendable (JSONValue) -> String, change: Change) {
        self.title = title
        self.current = current
        self.change = change
    }

    /// The rows, in the order shown.
    public static let all: [SetupExtra] = [
        SetupExtra(
            title: "Listening",
            current: { status in
                let transport = status["transport"]?.stringValue ?? "?"
                let wake = status["wake"]?.stringValue ?? "?"
                if transport == "stream" && wake == "server" { return "the server listens for the wake word" }
                if wake == "local" { return "the satellite listens for its own wake word (local), then sends the question" }
                if transport == "stream" { return "only when asked with parlourctl listen (push)" }
                return "one recording per parlourctl listen (record)"
            },
            change: .elsewhere("Set transport and wake in \(SatellitePaths.defaultConfig), then restart the satellite.")),
        SetupExtra(
            title: "Spoken notice when the house cannot be reached",
            current: { _ in "offline.speak in the config, on unless set to false" },
            change: .elsewhere("Set offline.speak, offline.voice and offline.text in \(SatellitePaths.defaultConfig), "
                               + "then restart the satellite.")),
    ]
}

