// The bash completion (packaging/bash-completion/parlourctl) against parlourctl's
// command table: every command and option there is offered, and nothing that is
// not. The completion runs in a real bash, as it does after Tab.
import Foundation
import Testing
import TestSupport
@testable import ControlCore
@testable import SatelliteCore

@Suite("bash completion", .offThePool)
struct CompletionTests {
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../packaging/bash-completion/parlourctl").standardized.path

    /// What the completion offers for each line, typed up to the cursor (a trailing space
    /// starts a new, empty word), in one bash run.
    static func offers(_ lines: [String]) throws -> [String: Set<String>] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("completion-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("lines").path, output = directory.appendingPathComponent("offers").path
        try lines.joined(separator: "\n").appending("\n").write(toFile: input, atomically: true, encoding: .utf8)
        let script = """
            set -u
            source "$1"
            while IFS= read -r line; do
                read -r -a COMP_WORDS <<< "parlourctl $line"
                [[ "$line" == *" " || -z "$line" ]] && COMP_WORDS+=("")
                COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
                _parlourctl
                printf '%s\\t%s\\n' "$line" "${COMPREPLY[*]}"
            done < "$2" > "$3"
            """
        try Spawn.run("bash", package: "bash", ["-c", script, "bash", file, input, output])
        var offers: [String: Set<String>] = [:]
        for row in try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false) {
            let parts = row.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            offers[String(parts[0])] = Set(parts[1].split(separator: " ").map(String.init))
        }
        return offers
    }

    static let globals: Set<String> = Set(ParlourctlCommandLine.globalOptions.map(\.name)).union(["--help", "--version"])

    @Test("the first word offers every command or group, and nothing else")
    func commands() throws {
        let offers = try Self.offers(["", "--json "])
        let firstWords = Set(ParlourctlCommandLine.commands.map { String($0.name.split(separator: " ")[0]) })
        #expect(offers[""] == firstWords)
        #expect(offers["--json "] == firstWords)
    }

    @Test("a group offers each of its commands, also after help")
    func groups() throws {
        let grouped = Dictionary(grouping: ParlourctlCommandLine.commands.filter { $0.name.contains(" ") }) {
            String($0.name.split(separator: " ")[0])
        }
        #expect(!grouped.isEmpty)
        let offers = try Self.offers(grouped.keys.flatMap { ["\($0) ", "help \($0) "] })
        for (group, specs) in grouped {
            let second = Set(specs.map { String($0.name.split(separator: " ")[1]) })
            #expect(offers["\(group) "] == second, "\(group)")
            #expect(offers["help \(group) "] == second, "help \(group)")
        }
    }

    @Test("each command offers its own options and the global ones")
    func options() throws {
        let specs = ParlourctlCommandLine.commands.filter { !$0.meta }
        let offers = try Self.offers(specs.map { "\($0.name) -" })
        for spec in specs {
            #expect(offers["\(spec.name) -"] == Set(spec.options.map(\.name)).union(Self.globals), "\(spec.name)")
        }
    }

    @Test("values: the model servers, the logs, triage, and - for a link on standard input")
    func values() throws {
        let offers = try Self.offers(["server start ", "server stop --yes ", "server restart w", "server logs ",
                                      "server pipeline --triage ", "pair ", "server start llm ", "--socket /tmp/s server logs a"])
        #expect(offers["server start "] == ["llm", "whisper"])
        #expect(offers["server stop --yes "] == ["llm", "whisper"])
        #expect(offers["server restart w"] == ["whisper"])
        #expect(offers["server logs "] == ["agent", "llm", "whisper"])
        #expect(offers["server pipeline --triage "] == ["auto", "always", "never"])
        #expect(offers["pair "] == ["-"])
        #expect(offers["server start llm "] == [])
        #expect(offers["--socket /tmp/s server logs a"] == ["agent"])
    }

    @Test("the wake-word models are the ones the package ships")
    func models() throws {
        let text = try String(contentsOfFile: Self.file, encoding: .utf8)
        #expect(text.contains("_parlourctl_models=\"okay_nabu hey_jarvis alexa hey_mycroft\""))
    }
}
