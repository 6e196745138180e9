import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("the cue sounds: built in, from a file, or none")
struct CueSoundsTests {
    /// Zero crossings per second over the sounding part: twice the note's frequency.
    static func hertz(_ samples: ArraySlice<Int16>) -> Double {
        let sounding = samples.filter { $0 != 0 }
        var crossings = 0
        for (a, b) in zip(sounding, sounding.dropFirst()) where (a < 0) != (b < 0) { crossings += 1 }
        return Double(crossings) * 16000 / Double(max(sounding.count, 1)) / 2
    }

    @Test("each built-in sound is short, 16 kHz mono, faded at the ends, and unlike the others")
    func builtins() {
        let awake = Cue.awake.builtin, done = Cue.done.builtin, error = Cue.error.builtin
        for sound in [awake, done, error] {
            #expect(sound.sampleRate == 16000 && sound.channels == 1)
            #expect(sound.duration <= .milliseconds(300))
            #expect(abs(Int(sound.samples.first!)) < 50 && abs(Int(sound.samples.last!)) < 50, "no click at the ends")
            #expect(sound.samples.map { abs(Int($0)) }.max()! <= 32767 * 3 / 10 + 1)
        }
        #expect(awake.frameCount == 2560 && done.frameCount == 1440 && error.frameCount == 4320)
        // The awake sound rises; the done sound is one middle note; the error sound is low.
        #expect(abs(Self.hertz(awake.samples[..<1120]) - 784) < 30)
        #expect(abs(Self.hertz(awake.samples[1120...]) - 1175) < 40)
        #expect(abs(Self.hertz(done.samples[...]) - 587) < 25)
        #expect(abs(Self.hertz(error.samples[...]) - 330) < 20)
    }

    func file(_ name: String, _ data: [UInt8]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cue-\(UUID().uuidString)-\(name)").path
        try Data(data).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("builtin, a WAV file, and \"\" for none")
    func load() throws {
        let ding = PCMAudio(sampleRate: 22050, channels: 2, samples: [Int16](repeating: 1000, count: 4410))
        let path = try file("ding.wav", WAV.encode(ding))
        defer { unlink(path) }
        let sounds = try CueSounds.load(.init(awake: "builtin", done: path, error: ""), configFile: "satellite.json")
        #expect(sounds[.awake] == Cue.awake.builtin)
        #expect(sounds[.done] == ding)
        #expect(sounds[.error] == nil)
        #expect(try CueSounds.load(.init(), configFile: "satellite.json").sounds.count == 3)
    }

    @Test("a bad sound file stops the start, naming the file, the key and why")
    func refused() throws {
        let notWAV = try file("notes.txt", Array("not a sound".utf8))
        let long = try file("long.wav", WAV.encode(PCMAudio(sampleRate: 8000, channels: 1, samples: [Int16](repeating: 0, count: 48_000))))
        let empty = try file("empty.wav", WAV.encode(PCMAudio(sampleRate: 16000, channels: 1, samples: [])))
        defer { for path in [notWAV, long, empty] { unlink(path) } }
        let cases: [(SatelliteConfig.Sounds, String)] = [
            (.init(awake: "/nonexistent/ding.wav"), "/etc/s.json: sounds.awake: expected a WAV file of at most 5 s, found /nonexistent/ding.wav, which does not exist"),
            (.init(done: notWAV), "/etc/s.json: sounds.done: expected a WAV file of at most 5 s, found \(notWAV), which is not a WAV this satellite can play"),
            (.init(error: long), "/etc/s.json: sounds.error: expected a WAV file of at most 5 s, found \(long), which lasts 6000 ms"),
            (.init(awake: empty), "/etc/s.json: sounds.awake: expected a WAV file of at most 5 s, found \(empty), which is not a WAV this satellite can play"),
        ]
        for (settings, message) in cases {
            do {
                _ = try CueSounds.load(settings, configFile: "/etc/s.json")
                Issue.record("\(settings) was accepted")
            } catch {
                #expect(error.description.hasPrefix(message), "\(error.description)")
            }
        }
    }
}
