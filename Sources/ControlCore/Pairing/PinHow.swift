// How the server in use was chosen, as status shows it; setup reads it back.

/// How the server in use was chosen (INTERFACE.md, status `how`).
public enum PinHow: String, Sendable, Equatable {
    case configured, paired, manual, discovered
}
