// Real ALSA for tests on a machine with no sound card: the `file` plugin over
// the `paced` test card (Tests/Fixtures/alsa_paced.c, built here with cc), so
// microphones read raw files and speakers write them at a real card's pace;
// and a card mixer (Tests/Fixtures/alsa_mixer.c), since the file plugin has none.
// ALSA reads its configuration once per process, so ALSA_CONFIG_PATH is set
// before the first ALSA call and never changed: every suite shares this one
// fixture, and each test passes its own files as device arguments instead.
import Foundation
import TestSupport
import TestEnvironment
import Glibc
import SatelliteCore

/// The test ALSA configuration of this process, built on first use.
final class ALSAFixture: Sendable {
    /// A name in the configuration whose card does not exist.
    let missing = "testmissing"
    /// Where the plugin, the configuration and the tests' files live.
    let directory: String

    struct SetupFailed: Error, CustomStringConvertible {
        let description: String
    }

    private static let instance: Result<ALSAFixture, SetupFailed> = Result { () throws(SetupFailed) in try ALSAFixture() }

    /// The fixture; call before anything touches ALSA.
    static func shared() throws -> ALSAFixture { try instance.get() }

    private init() throws(SetupFailed) {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("parlour-alsa-\(getpid())-\(UUID().uuidString.prefix(8))").path
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw SetupFailed(description: "Cannot create \(directory): \(error)")
        }
        /// Builds Tests/Fixtures/`source` into the plugin `library` in the fixture's directory.
        func build(_ source: String, _ library: String) throws(SetupFailed) -> String {
            let plugin = "\(directory)/\(library)"
            let path = root.appendingPathComponent("Tests/Fixtures/\(source)").path
            // -DPIC: without it alsa/global.h builds the plugin for a static libasound,
            // and dlopen fails with "undefined symbol: snd_dlsym_start".
            do {
                try Spawn.run("cc", package: "gcc", ["-O2", "-shared", "-fPIC", "-DPIC", "-o", plugin, path, "-lasound"])
            } catch {
                throw SetupFailed(description: "cc could not build \(path): \(error); is libasound2-dev installed?")
            }
            return plugin
        }
        let plugin = try build("alsa_paced.c", "libasound_module_pcm_paced.so")
        let mixerPlugin = try build("alsa_mixer.c", "libasound_module_ctl_testmixer.so")
        let config = """
            pcm_type.paced { lib "\(plugin)" }
            ctl_type.testmixer { lib "\(mixerPlugin)" }
            # A card mixer with one stereo playback volume CONTROL (0 to 87), kept in FILE.
            ctl.testmixer {
                @args [ FILE CONTROL ]
                @args.FILE { type string }
                @args.CONTROL { type string default "Master" }
                type testmixer
                file $FILE
                control $CONTROL
            }
            pcm.clock { type paced }
            # A microphone reading INFILE (raw S16_LE); what it captures is copied to FILE.
            pcm.testmic {
                @args [ INFILE FILE ]
                @args.INFILE { type string }
                @args.FILE { type string default "/dev/null" }
                type file
                slave.pcm "clock"
                infile $INFILE
                file $FILE
                format "raw"
            }
            # A speaker writing exactly what it is given to FILE.
            pcm.testspeaker_file {
                @args [ FILE ]
                @args.FILE { type string }
                type file
                slave.pcm "clock"
                file $FILE
                format "raw"
            }
            # A 16 kHz mono card behind plug, like `default` on a small satellite.
            pcm.testspeaker {
                @args [ FILE ]
                @args.FILE { type string }
                type plug
                slave {
                    pcm { type file slave.pcm "clock" file $FILE format "raw" }
                    format S16_LE
                    rate 16000
                    channels 1
                }
            }
            # The same, keeping every playback: the first in FILE, the next ones in FILE.0001, FILE.0002, …
            pcm.testspeakerlog {
                @args [ FILE ]
                @args.FILE { type string }
                type plug
                slave {
                    pcm { type file slave.pcm "clock" file $FILE format "raw" truncate false }
                    format S16_LE
                    rate 16000
                    channels 1
                }
            }
            pcm.\(missing) { type hw card 29 device 0 }

            """
        let configPath = "\(directory)/asound.conf"
        do {
            try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        } catch {
            throw SetupFailed(description: "Cannot write \(configPath): \(error)")
        }
        // Replaced in place, as other tests may be starting programs now (TestEnvironment says why).
        guard parlour_test_environment_ready() == 1 else {
            throw SetupFailed(description: "ALSA_CONFIG_PATH was not set before the tests started (Tests/TestEnvironment)")
        }
        setenv("ALSA_CONFIG_PATH", "/usr/share/alsa/alsa.conf:\(configPath)", 1)
        atexit {
            if let directory = try? ALSAFixture.shared().directory { try? FileManager.default.removeItem(atPath: directory) }
        }
        // A test speaker or microphone output may be a FIFO whose reader the test
        // closes; the write must fail with EPIPE rather than kill the test process.
        signal(SIGPIPE, SIG_IGN)
    }

    /// A fresh path in the fixture's directory (nothing is created there).
    func path(_ name: String) -> String { "\(directory)/\(UUID().uuidString.prefix(8))-\(name)" }

    /// A microphone that reads `infile` and copies what it captured to `file`.
    func microphone(infile: String, file: String = "/dev/null") -> String {
        "testmic:INFILE=\"\(infile)\",FILE=\"\(file)\""
    }

    /// The 16 kHz mono `plug` speaker whose output lands in `file`.
    func speaker(file: String) -> String { "testspeaker:FILE=\"\(file)\"" }

    /// A card mixer whose playback volume `control` is kept in `file` ("left right", 0 to 87).
    func mixer(file: String, control: String = "Master") -> String {
        "testmixer:FILE=\"\(file)\",CONTROL=\"\(control)\""
    }

    /// The 16 kHz mono `plug` speaker that keeps every playback: the file plugin does not truncate
    /// `file` when told not to, but starts `file.0001`, `file.0002`, … (see `playedInOrder`).
    func speakerLog(file: String) -> String { "testspeakerlog:FILE=\"\(file)\"" }

    /// Everything a `speakerLog` speaker played, one playback after the other.
    func playedInOrder(_ file: String) throws -> [Int16] {
        let folder = (file as NSString).deletingLastPathComponent, name = (file as NSString).lastPathComponent
        let more = try FileManager.default.contentsOfDirectory(atPath: folder)
            .filter { $0.hasPrefix(name + ".") && Int($0.dropFirst(name.count + 1)) != nil }.sorted()
        return try ([name] + more).flatMap { try readRaw(folder + "/" + $0) }
    }

    /// The speaker without conversion, writing what it is given to `file`.
    func rawSpeaker(file: String) -> String { "testspeaker_file:FILE=\"\(file)\"" }

    /// Writes samples as raw S16_LE.
    func writeRaw(_ samples: [Int16], to path: String) throws {
        let data = samples.withUnsafeBufferPointer { Data(buffer: $0) }
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// Reads a raw S16_LE file.
    func readRaw(_ path: String) throws -> [Int16] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }
}

extension AsyncStream<SatelliteEvent>.Iterator {
    /// The next microphone health published.
    mutating func nextMicrophone() async -> DeviceHealth? {
        while let event = await next() {
            if case .microphone(let health) = event { return health }
        }
        return nil
    }

    /// The next speaker health published.
    mutating func nextSpeaker() async -> DeviceHealth? {
        while let event = await next() {
            if case .speaker(let health) = event { return health }
        }
        return nil
    }
}
