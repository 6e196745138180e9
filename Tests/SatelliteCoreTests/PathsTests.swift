import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("paths and their overrides")
struct PathsTests {
    private static let everything: [String: String] = [
        "PARLOUR_SATELLITE_CONFIG": "/env/satellite.json",
        "STATE_DIRECTORY": "/systemd/state:/systemd/other",
        "PARLOUR_SATELLITE_STATE": "/env/state",
        "PARLOUR_SATELLITE_SOCKET": "/env/control.sock",
        "RUNTIME_DIRECTORY": "/systemd/run:/systemd/run2",
    ]

    @Test("with nothing set, the documented defaults apply and the config was not named")
    func defaults() {
        #expect(SatellitePaths.resolve(options: [:], environment: [:]) == SatellitePaths(
            config: "/etc/parlour-satellite/satellite.json", configExplicit: false,
            stateDirectory: "/var/lib/parlour-satellite", socket: "/run/parlour-satellite/control.sock"))
    }

    @Test("the command line wins over everything")
    func commandLineWins() {
        let paths = SatellitePaths.resolve(
            options: ["config": "/cli/satellite.json", "state-dir": "/cli/state", "socket": "/cli/control.sock"],
            environment: Self.everything)
        #expect(paths == SatellitePaths(config: "/cli/satellite.json", configExplicit: true,
                                        stateDirectory: "/cli/state", socket: "/cli/control.sock"))
    }

    @Test("without options: the config from its variable, state from systemd first, the socket from its variable first")
    func environmentOrder() {
        let paths = SatellitePaths.resolve(options: [:], environment: Self.everything)
        #expect(paths == SatellitePaths(config: "/env/satellite.json", configExplicit: true,
                                        stateDirectory: "/systemd/state", socket: "/env/control.sock"))
    }

    @Test("each override in turn, from the strongest down", arguments: [
        // (environment, state folder, socket)
        (["PARLOUR_SATELLITE_STATE": "/env/state", "RUNTIME_DIRECTORY": "/systemd/run"],
         "/env/state", "/systemd/run/control.sock"),
        (["STATE_DIRECTORY": "/systemd/state/", "RUNTIME_DIRECTORY": "/systemd/run/:/other"],
         "/systemd/state/", "/systemd/run/control.sock"),
        (["STATE_DIRECTORY": "", "PARLOUR_SATELLITE_STATE": "/env/state", "PARLOUR_SATELLITE_SOCKET": ""],
         "/env/state", "/run/parlour-satellite/control.sock"),
        (["STATE_DIRECTORY": ":/second", "RUNTIME_DIRECTORY": ""],
         "/second", "/run/parlour-satellite/control.sock"),
    ])
    func overrides(environment: [String: String], state: String, socket: String) {
        let paths = SatellitePaths.resolve(options: [:], environment: environment)
        #expect(paths.stateDirectory == state)
        #expect(paths.socket == socket)
    }

    @Test("an empty value counts as not given, so the config is not named")
    func emptyValues() {
        let paths = SatellitePaths.resolve(options: ["config": ""], environment: ["PARLOUR_SATELLITE_CONFIG": ""])
        #expect(paths.config == "/etc/parlour-satellite/satellite.json")
        #expect(!paths.configExplicit)
    }

    @Test("the token is looked for in the systemd credential, then the state folder, then the environment")
    func tokenOrder() {
        #expect(SatellitePaths.tokenCandidates(stateDirectory: "/var/lib/parlour-satellite",
                                               environment: ["CREDENTIALS_DIRECTORY": "/run/credentials/x"]) == [
            .file(path: "/run/credentials/x/token", kind: .credential),
            .file(path: "/var/lib/parlour-satellite/token", kind: .state),
            .environment(name: "PARLOUR_TOKEN"),
        ])
    }

    @Test("without systemd credentials, the state folder comes first")
    func tokenWithoutCredentials() {
        let sources = SatellitePaths.tokenCandidates(stateDirectory: "/tmp/s/", environment: [:])
        #expect(sources == [.file(path: "/tmp/s/token", kind: .state), .environment(name: "PARLOUR_TOKEN")])
        #expect(sources.map(\.description) == ["/tmp/s/token (the state folder)", "$PARLOUR_TOKEN"])
    }

    @Test("the pin and token files live in the state folder")
    func stateFiles() {
        let paths = SatellitePaths.resolve(options: ["state-dir": "/s"], environment: [:])
        #expect(paths.pinFile == "/s/pin.json")
        #expect(paths.tokenFile == "/s/token")
    }

    @Test("the folder of a path: the socket's, a bare name's, one at the root", arguments: [
        ("/run/parlour-satellite/control.sock", "/run/parlour-satellite"), ("control.sock", ""), ("/control.sock", "/"),
        ("run/x.sock", "run"),
    ])
    func folder(path: String, expected: String) {
        #expect(SatellitePaths.folder(of: path) == expected)
    }
}
