import Foundation
import Testing
@testable import SatelliteCore

@Suite struct RealFFTTests {
    @Test func theSpectrumIsTheDFTs() {
        let fft = RealFFT(size: 256)
        var generator = SeededGenerator(seed: 5)
        let input = (0..<256).map { _ in Float.random(in: -1000...1000, using: &generator) }
        var re = [Float](repeating: 0, count: fft.bins), im = re
        input.withUnsafeBufferPointer { x in fft.forward(x.baseAddress!, re: &re, im: &im) }
        var largest: Double = 0, worst: Double = 0
        for k in 0..<fft.bins {
            var (dr, di) = (0.0, 0.0)
            for n in 0..<256 {
                let phase = -2 * Double.pi * Double(k * n) / 256
                dr += Double(input[n]) * cos(phase)
                di += Double(input[n]) * sin(phase)
            }
            largest = max(largest, abs(dr), abs(di))
            worst = max(worst, abs(Double(re[k]) - dr), abs(Double(im[k]) - di))
        }
        #expect(worst < largest * 1e-5, "the largest error \(worst) against \(largest)")
    }

    @Test func theInverseGivesTheInputTimesTheLength() {
        let fft = RealFFT(size: 256)
        var generator = SeededGenerator(seed: 6)
        let input = (0..<256).map { _ in Float.random(in: -1000...1000, using: &generator) }
        var re = [Float](repeating: 0, count: fft.bins), im = re
        var output = [Float](repeating: 0, count: 256)
        input.withUnsafeBufferPointer { x in fft.forward(x.baseAddress!, re: &re, im: &im) }
        fft.inverse(re: re, im: im, into: &output)
        let worst = zip(input, output).map { abs($0 * 256 - $1) }.max() ?? .infinity
        #expect(worst < 256 * 1000 * 1e-5, "the largest error \(worst)")
    }
}

@Suite struct NoiseSuppressorTests {
    private func suppressed(_ samples: [Int16], chunk: Int = 160) -> [Int16] {
        let suppressor = NoiseSuppressor()
        var out: [Int16] = []
        var nothing: [Int16] = []
        for start in stride(from: 0, to: samples.count, by: chunk) {
            var part = Array(samples[start..<min(start + chunk, samples.count)])
            suppressor.process(&part)
            out += part
            // An empty chunk between two changes nothing.
            suppressor.process(&nothing)
        }
        return out
    }

    private func dBFS(_ samples: ArraySlice<Int16>) -> Double {
        let energy = samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count))
        return 10 * log10(max(energy, 1e-9) / (32768.0 * 32768.0))
    }

    @Test func aLoudSoundAfterSilenceComesOutAsItWentInLate() {
        let input = Signal.silence(500) + Signal.tone(1000, hz: 440, dBFS: -20) + Signal.silence(500)
        let output = suppressed(input)
        let latency = NoiseSuppressor.latency
        #expect(output.count == input.count)
        let tone = 8000..<24000
        let error = zip(input[tone], output[(tone.lowerBound + latency)..<(tone.upperBound + latency)]).map { Int16(clamping: Int($0) - Int($1)) }
        #expect(dBFS(error[...]) < dBFS(input[tone]) - 40, "what is lost of the tone, \(dBFS(error[...])) dBFS")
    }

    @Test(arguments: [1, 160, 333, 1920])
    func howItIsChunkedChangesNothing(chunk: Int) {
        let input = Signal.mix(Signal.noise(3000, dBFS: -35, seed: 3), Signal.silence(1000) + Signal.babble(1500))
        #expect(suppressed(input, chunk: chunk) == suppressed(input, chunk: input.count))
    }

    @Test func digitalSilenceStaysSilence() {
        #expect(suppressed(Signal.silence(2000)).allSatisfy { $0 == 0 })
    }

    @Test(arguments: [-45.0, -30, -15])
    func steadyNoiseSettlesAtTheFloor(level: Double) {
        let input = Signal.noise(6000, dBFS: level, seed: 4)
        let output = suppressed(input)
        // After the noise estimate's 1.5 s and more: the gain's floor, 18 dB.
        let drop = dBFS(input[48000...]) - dBFS(output[48000...])
        #expect(drop > 15 && drop < 21, "steady noise \(drop) dB down")
    }

    @Test func noiseThatGrowsLouderIsFollowed() {
        // The minimum forgets: 3 s at -50 dBFS, then 5 s at -30, whose last 2 s settle at the floor.
        let input = Signal.noise(3000, dBFS: -50, seed: 8) + Signal.noise(5000, dBFS: -30, seed: 9)
        let output = suppressed(input)
        let drop = dBFS(input[96000...]) - dBFS(output[96000...])
        #expect(drop > 15 && drop < 21, "the louder noise \(drop) dB down")
    }

    @Test func aToneInSteadyNoiseKeepsItsLevel() {
        let noise = Signal.noise(6000, dBFS: -40, seed: 7)
        let tone = Signal.silence(3000) + Signal.tone(2000, hz: 1000, dBFS: -20)
        let output = suppressed(Signal.mix(noise, tone))
        let latency = NoiseSuppressor.latency
        // A quarter to a whole second into the tone: a tone held longer than the noise estimate's
        // 1.5 s is steady noise to it, as to WebRTC's.
        let heard = output[(52000 + latency)..<(64000 + latency)]
        let said = tone[52000..<64000]
        #expect(abs(dBFS(heard) - dBFS(said)) < 1, "the tone at \(dBFS(heard)) dBFS, said at \(dBFS(said))")
        // And the noise between, before the tone, is down.
        #expect(dBFS(output[32000..<48000]) < dBFS(noise[32000..<48000][...]) - 15)
    }
}
