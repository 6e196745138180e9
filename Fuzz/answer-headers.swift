// libFuzzer target: AnswerHeaders.read on any lines a server may send as an
// answer's head, split where the input has a newline, as curl hands them
// over. It must never crash, refuse only lengths that disagree, and keep a
// Location only as the server sent it.
@testable import SatelliteCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: start, count: count)
    var head = AnswerHeaders()
    for line in bytes.split(separator: 10, omittingEmptySubsequences: false) {
        let before = head
        let accepted = head.read(line)
        if !accepted && head.lengths.count < 2 { fatalError("refused a head whose lengths agree") }
        if accepted && !line.starts(with: "HTTP/".utf8) && head.lengths.count > 1 { fatalError("took lengths that disagree") }
        if let location = head.location, location != before.location, location.utf8.contains(where: { $0 == 13 || $0 == 10 }) {
            fatalError("a Location holds a line break")
        }
        if !accepted { break }
    }
    return 0
}
