import Glibc
import Testing
@testable import SatelliteCore

/// The level a wake is claimed at: the RMS of the last second or so, in whole periods.
@Suite struct WakeLevelTests {
    static func tone(_ amplitude: Int16, count: Int) -> [Int16] {
        (0..<count).map { $0 % 2 == 0 ? amplitude : -amplitude }
    }

    @Test func silenceAndNothingAreTheFloor() {
        var level = WakeLevel()
        #expect(level.dBFS == SignalLevel.floorDBFS)
        level.add([Int16](repeating: 0, count: 320))
        #expect(level.dBFS == SignalLevel.floorDBFS)
    }

    @Test func aSquareWaveReadsItsAmplitude() {
        var level = WakeLevel()
        level.add(Self.tone(16384, count: 1600))
        #expect(abs(level.dBFS - (-6.0206)) < 0.001)
        level.add(Self.tone(32767, count: 10))
        #expect(level.dBFS > -6.0206)
    }

    @Test("only the newest periods that cover the span count")
    func theSpanSlides() {
        var level = WakeLevel(spanSamples: 1000)
        level.add(Self.tone(32000, count: 600))
        level.add(Self.tone(3200, count: 600))
        // 1200 samples: the loud period is still needed to cover 1000.
        let both = level.dBFS
        level.add(Self.tone(3200, count: 600))
        // The two quiet periods cover the span alone: the loud one has gone, exactly.
        #expect(abs(level.dBFS - 20 * log10(3200.0 / 32768)) < 1e-9)
        #expect(both > level.dBFS + 10)
        level.reset()
        #expect(level.dBFS == SignalLevel.floorDBFS)
    }

    @Test("twenty decibels quieter reads twenty decibels lower")
    func twentyDecibels() {
        var loud = WakeLevel()
        var quiet = WakeLevel()
        for _ in 0..<20 {
            loud.add(Self.tone(10000, count: 1280))
            quiet.add(Self.tone(1000, count: 1280))
        }
        #expect(abs(loud.dBFS - quiet.dBFS - 20) < 1e-9)
    }
}
