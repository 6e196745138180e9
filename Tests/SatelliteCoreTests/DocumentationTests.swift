// The README and the manual under docs/ against the tree: every relative link
// reaches a file (and a heading, for #anchors), every script named exists, and
// every parlourctl command shown in code is one parlourctl has.
import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("documentation")
struct DocumentationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized

    /// README.md and every docs/*.md, as (path from the root, text).
    static func documents() throws -> [(path: String, text: String)] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/\($0)" }
        return try (["README.md"] + docs).map { ($0, try String(contentsOf: root.appendingPathComponent($0), encoding: .utf8)) }
    }

    /// The lines outside fenced code, and the lines inside it.
    static func split(_ text: String) -> (prose: [String], code: [String]) {
        var prose: [String] = [], code: [String] = [], fenced = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("```") { fenced.toggle(); continue }
            if fenced { code.append(line) } else { prose.append(line) }
        }
        return (prose, code)
    }

    /// GitHub's anchor for a heading: lower case, spaces to dashes, punctuation dropped.
    static func anchor(_ heading: String) -> String {
        String(heading.lowercased().compactMap { c -> Character? in
            if c == " " { return "-" }
            return c.isLetter || c.isNumber || c == "-" || c == "_" ? c : nil
        })
    }

    static func anchors(_ text: String) -> Set<String> {
        Set(split(text).prose.filter { $0.hasPrefix("#") }.map { anchor(String($0.drop { $0 == "#" }).trimmed()) })
    }

    @Test("every relative link reaches a file, and its #anchor a heading there")
    func links() throws {
        let documents = try Self.documents()
        #expect(documents.count > 10, "docs/ holds the manual")
        let link = /\]\(([^)\s]+)\)/
        for document in documents {
            let folder = URL(fileURLWithPath: document.path).deletingLastPathComponent().relativePath
            for line in Self.split(document.text).prose {
                for match in line.matches(of: link) {
                    let target = String(match.1)
                    if target.hasPrefix("http://") || target.hasPrefix("https://") || target.hasPrefix("mailto:") { continue }
                    let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                    let file = parts[0].isEmpty ? document.path : (folder == "." ? parts[0] : "\(folder)/\(parts[0])")
                    let url = Self.root.appendingPathComponent(file).standardized
                    #expect(FileManager.default.fileExists(atPath: url.path), "\(document.path): \(target)")
                    if parts.count == 2, let text = try? String(contentsOf: url, encoding: .utf8) {
                        #expect(Self.anchors(text).contains(parts[1]), "\(document.path): \(target) has no such heading")
                    }
                }
            }
        }
    }

    @Test("every script named exists")
    func scripts() throws {
        for document in try Self.documents() {
            for match in document.text.matches(of: /scripts\/([a-z][a-z0-9-]*)/) where !match.1.hasSuffix("-") {
                let path = Self.root.appendingPathComponent("scripts/\(match.1)").path
                #expect(FileManager.default.fileExists(atPath: path), "\(document.path): scripts/\(match.1)")
            }
        }
    }

    @Test("every parlourctl command shown in code is one parlourctl has")
    func commands() throws {
        let known = Set(ParlourctlCommandLine.commands.map { String($0.name.split(separator: " ")[0]) })
        for document in try Self.documents() {
            let (prose, code) = Self.split(document.text)
            // In code blocks, and in `...` spans in prose.
            let spans = prose.flatMap { $0.matches(of: /`([^`]+)`/).map { String($0.1) } }
            for text in code + spans {
                for match in text.matches(of: /(?:^|[\s$(])parlourctl ([a-z][a-z-]*)/) {
                    #expect(known.contains(String(match.1)), "\(document.path): parlourctl \(match.1)")
                }
            }
        }
    }
}
