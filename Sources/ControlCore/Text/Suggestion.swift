// "Did you mean ...?" for a mistyped config key or command. A typo should cost
// one glance at the message, not a trip to the README; a wild guess is worse
// than none, so only names within a small edit distance are offered.

/// Finds the known name closest to a mistyped one.
package enum Suggestion {
    /// The candidate nearest to `word` (case is ignored), when it is at most `distance` edits away.
    /// Ties go to the earlier candidate, so the table order decides.
    package static func closest(to word: String, among candidates: [String], within distance: Int = 2) -> String? {
        let word = word.lowercased()
        let length = word.count
        var best: (name: String, distance: Int)?
        for candidate in candidates {
            let other = candidate.lowercased()
            // Lengths further apart than `distance` need more edits than that: skip the quadratic
            // work, which for a 64 KiB key in a broken config file took a tenth of a second a name.
            guard abs(other.count - length) <= distance else { continue }
            let d = editDistance(word, other)
            if d <= distance, d < (best?.distance ?? Int.max) { best = (candidate, d) }
        }
        return best?.name
    }

    /// Levenshtein distance: insertions, deletions and substitutions each cost one.
    package static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }

    /// ` Did you mean 'x'?` for a usage error, or nothing when no known word is close.
    package static func didYouMean(_ word: String, among known: [String]) -> String {
        closest(to: word, among: known).map { " Did you mean '\($0)'?" } ?? ""
    }
}
