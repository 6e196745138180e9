// Help laid out the way swift-argument-parser lays it out (OVERVIEW, USAGE,
// ARGUMENTS, OPTIONS, SUBCOMMANDS), so both programs read like other Swift
// tools. Layout lives here alone; the words live in each program's table.

/// One command's help, rendered as text.
struct HelpText {
    var overview: String
    /// Paragraphs under the overview, already wrapped to 80 columns.
    var discussion: String?
    var usage: String
    var arguments: [(label: String, help: String)] = []
    var options: [(label: String, help: String)] = []
    var subcommands: [(label: String, help: String)] = []
    var footer: String?

    /// The help text, without a final newline.
    var text: String {
        var sections = ["OVERVIEW: \(overview)"]
        if let discussion { sections.append(discussion) }
        sections.append(HelpText.wrapped(usage, after: "USAGE: "))
        if !arguments.isEmpty { sections.append(HelpText.section("ARGUMENTS", arguments)) }
        if !options.isEmpty { sections.append(HelpText.section("OPTIONS", options)) }
        if !subcommands.isEmpty { sections.append(HelpText.section("SUBCOMMANDS", subcommands)) }
        if let footer { sections.append("  " + footer) }
        return sections.joined(separator: "\n\n")
    }

    /// `usage` after `lead`, wrapped at 80 columns between its parts (a bracketed option is one
    /// part), later lines indented to stand under the first.
    static func wrapped(_ usage: String, after lead: String) -> String {
        var parts: [String] = []
        var depth = 0
        for character in usage {
            if character == " " && depth == 0 {
                parts.append("")
                continue
            }
            if parts.isEmpty { parts.append("") }
            if character == "[" { depth += 1 }
            if character == "]" { depth -= 1 }
            parts[parts.count - 1].append(character)
        }
        var lines = [lead]
        for part in parts where !part.isEmpty {
            let line = lines[lines.count - 1]
            if line.count > lead.count && line.count + 1 + part.count > 80 {
                lines.append(String(repeating: " ", count: lead.count) + part)
            } else {
                lines[lines.count - 1] = line + (line.count > lead.count ? " " : "") + part
            }
        }
        return lines.joined(separator: "\n")
    }

    /// Labels in a column of 24 after a 2-space indent; a longer label puts its help on the next line.
    private static func section(_ title: String, _ rows: [(label: String, help: String)]) -> String {
        let column = 24
        let lines = rows.map { row in
            row.label.count < column - 1
                ? "  " + row.label + String(repeating: " ", count: column - row.label.count) + row.help
                : "  " + row.label + "\n" + String(repeating: " ", count: column + 2) + row.help
        }
        return "\(title):\n" + lines.joined(separator: "\n")
    }
}

/// An option of a command: a flag, or an option with a value when `value` names it.
struct OptionSpec: Sendable {
    /// As typed, such as `--hold`.
    let name: String
    /// The value's placeholder, such as `<path>`; nil for a flag.
    let value: String?
    /// One imperative sentence.
    let help: String

    init(_ name: String, value: String? = nil, help: String) {
        self.name = name
        self.value = value
        self.help = help
    }

    var label: String { value.map { "\(name) \($0)" } ?? name }
    var usage: String { "[\(label)]" }
}

/// The help rows every command shows for `--help` (and the top level for `--version`).
enum StandardOptions {
    static let version = (label: "--version", help: "Show the version.")
    static let help = (label: "-h, --help", help: "Show help information.")
}
