// swift-tools-version:6.1
// parlour-satellite: a headless room satellite for the Parlour voice assistant.
// Swift 6.1 or later (the tests' `#expect(throws:)` gives the error back from 6.1); 6.3 is the one
// built and tested with, and the first whose executor SPI the daemon's loop needs (MainLoop.swift).
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]
// Swift imports _StringProcessing (regex) into every file unless told not to; the programs' modules
// use none of it, and linking it costs 1.2 MB.
let noRegex: [SwiftSetting] = [.unsafeFlags(["-Xfrontend", "-disable-implicit-string-processing-module-import"])]

let package = Package(
    name: "parlour-satellite",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "parlour-satellite", targets: ["parlour-satellite"]),
        .executable(name: "parlourctl", targets: ["parlourctl"]),
    ],
    targets: [
        // C libraries from Debian, through system library targets: a modulemap and a shim header each.
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        // HTTP (Satellite/Server/HTTPLoop.swift): libcurl's multi interface, over OpenSSL.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CAvahi", providers: [.apt(["libavahi-client-dev"])]),
        // Headers only: OfflineVoice opens libespeak-ng with dlopen (Sources/CEspeak/shim.h says why).
        .systemLibrary(name: "CEspeak", providers: [.apt(["libespeak-ng-dev"])]),
        .systemLibrary(name: "CSpawn"),
        // OpenSSL by dlopen on the first https or wss connection (include/tls.h says why): headers only, nothing linked.
        .target(name: "COpenSSL"),
        .systemLibrary(name: "CPrctl"),
        // TensorFlow Lite's C API for the local wake word: declarations only, the library is dlopened.
        .systemLibrary(name: "CTFLite"),
        // speexdsp: its echo canceller, and its resampler for the speaker's audio at the canceller's rate (Satellite/Audio/EchoCanceller.swift).
        .systemLibrary(name: "CSpeexDSP", pkgConfig: "speexdsp", providers: [.apt(["libspeexdsp-dev"])]),
        // WebRTC's audio processing (echo cancelling, gain) is C++: a C shim of one file.
        .target(name: "CWebRTCAudio",
                cxxSettings: [.define("WEBRTC_POSIX"), .define("WEBRTC_AUDIO_PROCESSING_ONLY_BUILD"),
                              .unsafeFlags(["-I/usr/include/webrtc_audio_processing"])],
                linkerSettings: [.linkedLibrary("webrtc_audio_processing")]),
        // dl_iterate_phdr and madvise: the read-only pages given back (Satellite/System/ResidentPages.swift).
        .target(name: "CPages"),

        // What parlourctl needs: the control protocol, the command lines, JSON, setup's steps, the
        // results' words. No Foundation and no regex library, so parlourctl links neither
        // (BENCHMARKS.md, "What each binary weighs"); the daemon gets it through SatelliteCore.
        .target(name: "ControlCore", swiftSettings: strict + noRegex),
        // Pure policy and codecs, over Glibc alone: neither it nor Satellite imports Foundation
        // (BENCHMARKS.md, "The daemon without Foundation").
        .target(name: "SatelliteCore", dependencies: ["ControlCore"], swiftSettings: strict + noRegex),
        // The actors and their adapters around the C libraries.
        .target(name: "Satellite", dependencies: ["SatelliteCore", "CALSA", "CAvahi", "CCurl", "CEspeak", "COpenSSL", "CPages", "CPrctl", "CSpawn", "CSpeexDSP", "CSystemd", "CTFLite", "CWebRTCAudio"], swiftSettings: strict + noRegex),
        .executableTarget(name: "parlour-satellite", dependencies: ["Satellite", "SatelliteCore"], swiftSettings: strict + noRegex),
        .executableTarget(name: "parlourctl", dependencies: ["ControlCore"], swiftSettings: strict + noRegex),
        // scripts/bench's: the wake word engine over recordings, faster than real time (not installed).
        .executableTarget(name: "wakeword-bench", dependencies: ["Satellite", "SatelliteCore"], swiftSettings: strict),

        // What both test targets need to run tools (espeak-ng, sox, cc) safely.
        .target(name: "TestSupport", dependencies: ["ControlCore", "TestEnvironment"], path: "Tests/TestSupport", swiftSettings: strict),
        // The variables tests set at run time, put in the environment before any thread starts.
        .target(name: "TestEnvironment", path: "Tests/TestEnvironment"),
        .testTarget(name: "SatelliteCoreTests", dependencies: ["ControlCore", "SatelliteCore", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "SatelliteTests", dependencies: ["Satellite", "SatelliteCore", "TestSupport", "TestEnvironment", "CTestProcess"], swiftSettings: strict),
        // pidfd_open for the tests, which await a grandchild's end (Tests/CTestProcess/include/test_process.h).
        .target(name: "CTestProcess", path: "Tests/CTestProcess"),
    ]
)
