// The man pages (packaging/man) against the programs: every parlourctl command
// and option, and every daemon option, has its entry, and the pages name the
// version the programs print.
import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("man pages")
struct ManPageTests {
    /// The page's roff with the escapes that matter here undone: `\-` is a dash, fonts go.
    static func page(_ name: String) throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../packaging/man/\(name)").standardized
        var text = try String(contentsOf: url, encoding: .utf8).replacingOccurrences(of: "\\-", with: "-")
        for font in ["\\fB", "\\fI", "\\fR"] { text = text.replacingOccurrences(of: font, with: "") }
        return text
    }

    @Test("parlourctl(1) has an entry for every command, with each of its options")
    func parlourctl() throws {
        let lines = try Self.page("parlourctl.1").split(separator: "\n").map(String.init)
        for spec in ParlourctlCommandLine.commands where !spec.meta {
            let entry = lines.first { $0 == ".B \(spec.name)" || $0.hasPrefix(".B \(spec.name) ") }
            #expect(entry != nil, "no .B \(spec.name) entry")
            for option in spec.options {
                #expect(entry?.contains(option.name) == true, "\(spec.name): \(option.name)")
            }
        }
        for option in ParlourctlCommandLine.globalOptions {
            #expect(lines.contains { $0.hasPrefix(".B \(option.name)") || $0.hasPrefix(".BI \(option.name)") }, "\(option.name)")
        }
    }

    @Test("parlour-satellite(8) has an entry for every option")
    func daemon() throws {
        let text = try Self.page("parlour-satellite.8")
        for option in DaemonCommandLine.options {
            #expect(text.contains(".BI \(option.name) "), "\(option.name)")
        }
    }

    @Test("both pages name the version the programs print", arguments: ["parlourctl.1", "parlour-satellite.8"])
    func version(page: String) throws {
        let header = try #require(Self.page(page).split(separator: "\n").first { $0.hasPrefix(".TH ") })
        #expect(header.contains("\"parlour-satellite \(SatelliteVersion.satellite)\""))
    }
}
