// SignalLevel's figures and verdicts, and the level meter's windows, result,
// sentences and bar, on samples whose levels are known by arithmetic.
import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("the level meter")
struct LevelMeterTests {
    static func sine(amplitude: Double, count: Int) -> [Int16] {
        (0..<count).map { Int16(clamping: Int((amplitude * sin(Double($0) * 2 * .pi * 1000 / 16000)).rounded())) }
    }

    @Test("a full-scale sine is about -3 dBFS RMS and 0 dBFS peak; silence is the floor")
    func figures() {
        var loud = SignalLevel()
        loud.add(Self.sine(amplitude: 32767, count: 16000))
        #expect(abs(loud.rmsDBFS - -3.01) < 0.05)
        #expect(abs(loud.peakDBFS) < 0.01)
        var silent = SignalLevel()
        silent.add([Int16](repeating: 0, count: 100))
        #expect(silent.rmsDBFS == SignalLevel.floorDBFS && silent.peakDBFS == SignalLevel.floorDBFS)
        #expect(SignalLevel().rmsDBFS == SignalLevel.floorDBFS)
    }

    @Test("verdicts", arguments: [
        ([Int16](), SignalLevel.Verdict.none),
        ([Int16](repeating: 0, count: 320), .silent),
        ([Int16](repeating: 1200, count: 320), .constant),
        ([Int16](repeating: Int16.min, count: 320), .constant),
        (sine(amplitude: 3, count: 1600), .quiet),
        (sine(amplitude: 8000, count: 1600), .ok),
        (sine(amplitude: 40000, count: 1600), .clipping),
    ])
    func verdicts(samples: [Int16], verdict: SignalLevel.Verdict) {
        var level = SignalLevel()
        level.add(samples)
        #expect(level.verdict == verdict)
    }

    @Test("one sample is not yet a constant value")
    func oneSample() {
        var level = SignalLevel()
        level.add([500])
        #expect(level.verdict == .ok || level.verdict == .quiet)
        #expect(level.verdict != .constant)
    }

    @Test("chunks of any size make 100 ms windows; the result holds the whole and the loudest window")
    func windows() {
        var meter = LevelMeter()
        var windows: [SignalLevel] = []
        // Half a second of silence then half a second of tone, in 20 ms chunks, then a ragged tail.
        let audio = [Int16](repeating: 0, count: 8000) + Self.sine(amplitude: 16384, count: 8000) + [1, 2, 3]
        var offset = 0
        while offset < audio.count {
            let end = min(audio.count, offset + 320)
            windows += meter.add(Array(audio[offset..<end]))
            offset = end
        }
        #expect(windows.count == 10)
        #expect(windows.prefix(5).allSatisfy { $0.peak == 0 })
        #expect(windows.suffix(5).allSatisfy { abs($0.rmsDBFS - -9.03) < 0.1 })
        let result = meter.result
        #expect(result["seconds"] == 1.0)
        #expect(result["loudest"] == .number(-9.0))
        #expect(result["signal"] == "ok")
        #expect(abs((result["rms"]?.numberValue ?? 0) - -12.0) < 0.1)
        #expect(MeterText.heardVoice(result))
        #expect(LevelMeter.event(windows[9]) == ["event": "level", "rms": -9.0, "peak": -6.0])
    }

    @Test("the summary says whether a voice was heard", arguments: [
        (["signal": "ok", "loudest": -20.5], "The microphone hears you: the loudest moment was -20.5 dBFS."),
        (["signal": "ok", "loudest": -62.0], "The microphone heard nothing louder than -62.0 dBFS"),
        (["signal": "quiet", "loudest": -75.0], "The microphone heard nothing louder than -75.0 dBFS"),
        (["signal": "silent", "loudest": -96.0], "The microphone gives only zeros (digital silence)"),
        (["signal": "constant", "loudest": -30.0], "The microphone gives one value over and over"),
        (["signal": "clipping", "loudest": -1.0], "The microphone hears you: the loudest moment was -1.0 dBFS. It clips at times"),
    ] as [(JSONValue, String)])
    func summary(result: JSONValue, sentence: String) {
        #expect(MeterText.summary(result).hasPrefix(sentence), "\(MeterText.summary(result))")
    }

    @Test("the bar fills from -60 dBFS to 0")
    func bar() {
        #expect(MeterText.bar(["rms": -30.0, "peak": -12.5], width: 10, plain: true) == "[#####.....]  -30.0 dBFS (peak -12.5)")
        #expect(MeterText.bar(["rms": -96.0, "peak": -96.0], width: 4, plain: false) == "[····]  -96.0 dBFS (peak -96.0)")
        #expect(MeterText.bar(["rms": 0.0, "peak": 0.0], width: 4, plain: false) == "[████]    0.0 dBFS (peak 0.0)")
    }
}
