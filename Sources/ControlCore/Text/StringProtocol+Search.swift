// Finding a piece of text in a string, as the standard library's
// `firstRange(of:)` does: that one is _StringProcessing's, the regex
// library, which ControlCore does not import, so that parlourctl does not
// link it (1.2 MB; BENCHMARKS.md, "What each binary weighs").

extension StringProtocol {
    /// Where `piece` first occurs, compared character by character; nil when it does not, or is empty.
    public func range(ofText piece: some StringProtocol) -> Range<Index>? {
        guard let first = piece.first else { return nil }
        var start = startIndex
        while let found = self[start...].firstIndex(of: first) {
            var here = found
            var there = piece.startIndex
            while here < endIndex, there < piece.endIndex, self[here] == piece[there] {
                here = index(after: here)
                there = piece.index(after: there)
            }
            if there == piece.endIndex { return found..<here }
            start = index(after: found)
        }
        return nil
    }
}
