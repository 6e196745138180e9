// The echo canceller's processing alone, offline and sample exact: the same
// room, heard in 20 ms periods (a push turn), 120 ms (the local ear) and 80 ms
// (the streamed room), gives the same result. Two answers of espeak-ng speech
// with a pause between, echoed by a room made here (a delay, a gain, and for
// one a decaying reverberation), through EchoCanceller as the audio thread
// drives it; the echo return loss enhancement (ERLE) over the first answer
// from two seconds in, over the second from half a second in. Live, the same
// is asked of the daemon in EchoModesTests, where the machine's load moves the
// test room's own timing.
import Foundation
import Testing
import TestSupport
import SatelliteCore
import Satellite

// Off the pool: each case is a minute or two of one core, which would hold up every async test of the parallel pass.
@Suite("the echo canceller in every period", .offThePool)
struct EchoPeriodTests {
    struct Room: Sendable, CustomTestStringConvertible {
        let delay: Int
        let gainDB: Double
        let reverb: Bool
        var inverted = false
        var testDescription: String {
            "\(reverb ? "reverberant" : "dry") room, echo \(Int(-gainDB)) dB down, \(delay / 16) ms late\(inverted ? ", inverted" : "")"
        }

        /// What the microphone hears of `played`: the direct path, and with `reverb` 120 ms of
        /// reflections decaying by 60 dB.
        func echo(of played: [Int16]) -> [Int16] {
            var response = [Double](repeating: 0, count: reverb ? 1920 : 1)
            response[0] = 1
            if reverb {
                var seed: UInt64 = 7
                for i in 1..<response.count {
                    seed = seed &* 6364136223846793005 &+ 1442695040888963407
                    let white = Double(Int64(bitPattern: seed >> 11) % 2001 - 1000) / 1000
                    response[i] = 0.3 * white * pow(10, -3 * Double(i) / Double(response.count))
                }
            }
            let gain = (inverted ? -1 : 1) * pow(10, gainDB / 20)
            var out = [Int16](repeating: 0, count: played.count)
            for i in delay..<played.count {
                var sum = 0.0
                for (k, h) in response.enumerated() where i - delay - k >= 0 && h != 0 { sum += h * Double(played[i - delay - k]) }
                out[i] = Int16(clamping: Int(sum * gain))
            }
            return out
        }
    }

    static let rooms = [Room(delay: 1600, gainDB: -12, reverb: true), Room(delay: 4000, gainDB: -6, reverb: false),
                        Room(delay: 4000, gainDB: -6, reverb: false, inverted: true)]

    /// Two answers, 1.5 s apart, and where each starts.
    static let answers: (played: [Int16], starts: [Int], length: Int) = {
        let answer = (try? Speech.recording("The weather today is mostly sunny with a light breeze from the west, "
                                            + "and temperatures reaching twenty degrees by the afternoon.",
                                            leadingMs: 0, trailingMs: 0).samples) ?? []
        let gap = [Int16](repeating: 0, count: 24000)
        return (gap + answer + gap + answer + gap, [gap.count, 2 * gap.count + answer.count], answer.count)
    }()

    /// The ERLE (dB) of `processed` against `heard` over `range`.
    static func erle(_ heard: [Int16], _ processed: [Int16], _ range: Range<Int>) -> Double {
        func power(_ samples: ArraySlice<Int16>) -> Double { samples.reduce(0) { $0 + Double($1) * Double($1) } + 1 }
        return 10 * log10(power(heard[range]) / power(processed[range]))
    }

    @Test("20, 80 and 120 ms periods cancel alike: 25 dB from 2 s into the first answer, from half a second into the next",
          arguments: rooms)
    func everyPeriod(_ room: Room) throws {
        let (played, starts, length) = Self.answers
        try #require(length > 4 * 16000, "espeak-ng said the answer")
        let heard = room.echo(of: played)
        for period in [320, 1280, 1920] {
            let notice: @Sendable (Priority, String, [String: String]) -> Void = { _, _, _ in }
            guard let canceller = EchoCanceller(AudioProcessing(echoCancel: true, noiseSuppression: false, autoGain: false), notice: notice) else {
                Issue.record("the canceller could not be made")
                return
            }
            let out = canceller.process(heard, played: played, period: period)
            let first = Self.erle(heard, out, (starts[0] + 32000)..<(starts[0] + length))
            let second = Self.erle(heard, out, (starts[1] + 8000)..<(starts[1] + length))
            print("ERLE offline, \(room.testDescription), \(period / 16) ms periods: first answer \(SignalLevel.rounded(first)) dB, "
                  + "second \(SignalLevel.rounded(second)) dB")
            #expect(first >= 25, "\(period / 16) ms: first answer \(first) dB")
            #expect(second >= 25, "\(period / 16) ms: second answer \(second) dB")
        }
    }
}
