// Trimming text the way config values, pairing links and typed answers need it,
// without Foundation's CharacterSet: the daemon links FoundationEssentials only,
// which has no CharacterSet, and full Foundation brings ICU (megabytes of RSS).

extension StringProtocol {
    /// Without leading and trailing whitespace and line breaks (Unicode's White_Space).
    public func trimmed() -> String {
        trimming { $0.properties.isWhitespace }
    }

    /// Without leading and trailing spaces and tabs; line breaks stay.
    public func trimmingSpaces() -> String {
        trimming { $0 == "\t" || $0.properties.generalCategory == .spaceSeparator }
    }

    /// Without the leading and trailing scalars for which `drop` is true.
    public func trimming(_ drop: (Unicode.Scalar) -> Bool) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !drop($0) }),
              let last = scalars.lastIndex(where: { !drop($0) }) else { return "" }
        var kept = String.UnicodeScalarView()
        kept.append(contentsOf: scalars[first...last])
        return String(kept)
    }
}

extension Unicode.Scalar {
    /// A control or format character (general category Cc or Cf), as Foundation's
    /// CharacterSet.controlCharacters has it.
    public var isControlCharacter: Bool {
        switch properties.generalCategory {
        case .control, .format: return true
        default: return false
        }
    }
}
