// scripts/bench's driver for the local wake word: the daemon's own engine
// (WakeWordEngine, fed WakeWordService's periods, reset after each wake as the
// service resets it) run over recordings as fast as the CPU allows, so that a
// corpus and an hour of speech take seconds, not their length. It prints, as one
// JSON object, each clip's wakes and the CPU the engine took, with the front end
// alone timed over the same audio so the model's share is the difference. The
// bench sets it beside pymicro-wakeword on the same audio
// (Tests/Fixtures/wakeword_reference.py). Not installed: scripts/package builds
// only the daemon and parlourctl.
//
//   wakeword-bench [--played PLAYED.raw [--processing aec,ns,agc]] FOLDER MODEL CLIP.raw...
//
// FOLDER holds lib/ and models/ as scripts/deps lays out .build/wakeword; MODEL is
// a shipped model's name or a manifest's path; each CLIP is 16 kHz mono S16_LE,
// heard from a fresh engine (a fresh front end and model). With --played, each
// CLIP is what a microphone heard in a room while its speaker played PLAYED
// (from the clip's first sample on), and goes through the daemon's processing
// (EchoCanceller, fresh for each clip; echo cancelling and noise suppression
// unless --processing says otherwise) before the engine: the wake word over an
// answer, offline. Each clip then also has the level of what it heard and of what
// the processing made of it after its first 2 s (their difference is the ERLE on
// a clip of echo alone), and the processing's CPU is given.
import Glibc
import Satellite
import SatelliteCore

func threadCPUSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

func fail(_ message: String) -> Never {
    _ = Array("wakeword-bench: \(message)\n".utf8).withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(1)
}

func samples(_ path: String) -> [Int16] {
    guard let data = try? FileSystem.read(path) else { fail("cannot read \(path)") }
    return data.withUnsafeBytes { bytes in
        (0..<bytes.count / 2).map { Int16(littleEndian: bytes.loadUnaligned(fromByteOffset: 2 * $0, as: Int16.self)) }
    }
}

var arguments = CommandLine.arguments.dropFirst()
var played: [Int16]?
var processing = AudioProcessing(echoCancel: true, noiseSuppression: true, autoGain: false)
while let option = arguments.first, option.hasPrefix("--"), arguments.count >= 2 {
    let value = arguments[arguments.startIndex + 1]
    arguments = arguments.dropFirst(2)
    switch option {
    case "--played": played = samples(value)
    case "--processing":
        let parts = Set(value.split(separator: ",").map(String.init))
        processing = AudioProcessing(echoCancel: parts.contains("aec"), noiseSuppression: parts.contains("ns"), autoGain: parts.contains("agc"))
    default: fail("unknown option \(option)")
    }
}
guard arguments.count >= 3 else { fail("usage: wakeword-bench [--played PLAYED.raw [--processing aec,ns,agc]] FOLDER MODEL CLIP.raw...") }
let filterLength = ProcessEnvironment.variables["PARLOUR_ECHO_FILTER"].flatMap { Int($0) } ?? EchoCanceller.filterLength
let suppression = ProcessEnvironment.variables["PARLOUR_ECHO_SUPPRESSION"].flatMap { Int32($0) } ?? EchoCanceller.suppression

/// dBFS of `audio` after its first 2 s.
func level(_ audio: [Int16]) -> Double {
    let rest = audio.dropFirst(32000)
    let energy = rest.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, rest.count))
    return 10 * log10(max(energy, 1e-3) / (32768.0 * 32768.0))
}
let folder = WakeWordFolder(path: arguments[arguments.startIndex])
let settings = SatelliteConfig.WakeWord(model: arguments[arguments.startIndex + 1])
let period = WakeWordService.periodFrames

var clips: [String] = []
var engineSeconds = 0.0, frontendSeconds = 0.0, audioSeconds = 0.0, processingSeconds = 0.0
for path in arguments.dropFirst(2) {
    var audio = samples(path)
    var levels = ""
    if let played {
        guard let canceller = EchoCanceller(processing, filterLength: filterLength, suppression: suppression, notice: { _, _, _ in }) else {
            fail("the processing could not be set up")
        }
        let heard = audio
        let began = threadCPUSeconds()
        audio = canceller.process(heard, played: played)
        processingSeconds += threadCPUSeconds() - began
        levels = #", "heard_dbfs": \#(level(heard)), "processed_dbfs": \#(level(audio)), "delay_ms": \#((canceller.measuredDelay ?? -16) / 16)"#
    }
    let engine: WakeWordEngine
    do {
        engine = try WakeWordEngine.load(settings, folder: folder, configFile: "(wakeword-bench)")
    } catch {
        fail("\(error)")
    }
    var wakes: [String] = []
    let began = threadCPUSeconds()
    for start in stride(from: 0, to: audio.count, by: period) {
        let chunk = Array(audio[start..<min(start + period, audio.count)])
        do {
            if let wake = try engine.hear(chunk) {
                wakes.append(#"{"ms": \#((start + wake.end) / 16), "probability": \#(wake.probability)}"#)
                try engine.reset()
            }
        } catch {
            fail("\(path): \(error)")
        }
    }
    engineSeconds += threadCPUSeconds() - began
    var frontend = MicroFrontend()
    let frontBegan = threadCPUSeconds()
    var frames = 0
    for start in stride(from: 0, to: audio.count, by: period) {
        frames += frontend.process(audio[start..<min(start + period, audio.count)]).count
    }
    frontendSeconds += threadCPUSeconds() - frontBegan
    audioSeconds += Double(audio.count) / 16_000
    clips.append(#"{"wakes": [\#(wakes.joined(separator: ", "))], "frames": \#(frames)\#(levels)}"#)
}
print(#"{"audio_s": \#(audioSeconds), "engine_cpu_s": \#(engineSeconds), "frontend_cpu_s": \#(frontendSeconds), "#
    + #""processing_cpu_s": \#(processingSeconds), "period_frames": \#(period), "clips": [\#(clips.joined(separator: ",\n"))]}"#)
