// doctor's verdicts and fixes, case by case, and how parlourctl prints them.
// The fixes are pinned word for word: a person pastes them.
import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("doctor's rules")
struct DoctorRulesTests {
    static func level(_ samples: [Int16]) -> SignalLevel {
        var level = SignalLevel()
        level.add(samples)
        return level
    }

    static func sine(amplitude: Double, count: Int = 16000) -> [Int16] {
        (0..<count).map { Int16(clamping: Int((amplitude * sin(Double($0) * 2 * .pi * 440 / 16000)).rounded())) }
    }

    static let config = "/etc/parlour-satellite/satellite.json"

    @Test("the microphone: sound is ok; zeros, one value and nothing at all fail; quiet and clipping warn", arguments: [
        (level(sine(amplitude: 3000)), DoctorCheck.Status.ok, "testmic hears a signal: RMS -23.8 dBFS, peak -20.8 dBFS over 1.0 s."),
        (level([Int16](repeating: 0, count: 16000)), .fail, "testmic gives only zeros (digital silence) over 1.0 s"),
        (level([Int16](repeating: -7, count: 8000)), .fail, "testmic gives the same value (-7) in every sample over 0.5 s"),
        (SignalLevel(), .fail, "The microphone testmic opened but gave no sound at all."),
        (level(sine(amplitude: 5)), .warn, "testmic barely hears anything: RMS -79.2 dBFS, peak -76.3 dBFS over 1.0 s."),
        (level(sine(amplitude: 60000)), .warn, "testmic clips: "),
    ])
    func microphoneLevels(level: SignalLevel, status: DoctorCheck.Status, detail: String) {
        let check = DoctorRules.microphone(device: "testmic", config: Self.config, .heard(level), user: "parlour-satellite")
        #expect(check.name == .microphone)
        #expect(check.status == status)
        #expect(check.detail.hasPrefix(detail), "\(check.detail)")
        #expect((check.fix == nil) == (status == .ok))
    }

    @Test("the microphone of a muted satellite, or of a conversation under way, is a warning and is not opened")
    func microphoneLeftAlone() {
        let muted = DoctorRules.microphone(device: "mic", config: Self.config, .muted, user: "u")
        #expect(muted.status == .warn && muted.fix == "parlourctl unmute")
        let busy = DoctorRules.microphone(device: "mic", config: Self.config, .busy(.listening), user: "u")
        #expect(busy.status == .warn)
        #expect(busy.detail == "A conversation is under way (listening), so the microphone was not taken from it.")
    }

    @Test("a device that cannot be opened fails with the fix for its errno", arguments: [
        (EACCES, "sudo usermod -aG audio parlour-satellite && sudo systemctl restart parlour-satellite"),
        (EBUSY, "fuser -v /dev/snd/*   # shows what holds the sound card; stop it, or share it through dmix/dsnoop"),
        (ENOENT, "arecord -L   # then set audio.input in /etc/parlour-satellite/satellite.json to a device it lists"),
    ])
    func unavailableMicrophone(errno: Int32, fix: String) {
        let check = DoctorRules.microphone(device: "hw:1,0", config: Self.config,
                                           .unavailable(reason: String(cString: strerror(errno)), errno: errno), user: "parlour-satellite")
        #expect(check.status == .fail)
        #expect(check.detail == "The microphone hw:1,0 cannot be opened: \(String(cString: strerror(errno))).")
        #expect(check.fix == fix)
    }

    @Test("the speaker")
    func speaker() {
        #expect(DoctorRules.speaker(device: "default", config: Self.config, error: nil, user: "u")
            == DoctorCheck(.speaker, .ok, "default opens."))
        let missing = DoctorRules.speaker(device: "default", config: Self.config, error: ("No such file or directory", ENOENT), user: "u")
        #expect(missing.status == .fail)
        #expect(missing.fix == "aplay -L   # then set audio.output in /etc/parlour-satellite/satellite.json to a device it lists")
    }

    typealias Access = DoctorRules.AudioAccess

    @Test("the audio group", arguments: [
        (Access(user: "root", uid: 0, inAudioGroup: false, audioGroupExists: true, devices: .usable), DoctorCheck.Status.ok, nil),
        (Access(user: "ps", uid: 995, inAudioGroup: true, audioGroupExists: true, devices: .usable), .ok, nil),
        (Access(user: "ps", uid: 995, inAudioGroup: false, audioGroupExists: true, devices: .denied("/dev/snd/pcmC0D0c")), .fail,
         "sudo usermod -aG audio ps && sudo systemctl restart parlour-satellite"),
        (Access(user: "ps", uid: 995, inAudioGroup: false, audioGroupExists: true, devices: .usable), .warn,
         "sudo usermod -aG audio ps && sudo systemctl restart parlour-satellite"),
        (Access(user: "ps", uid: 995, inAudioGroup: true, audioGroupExists: true, devices: .missing), .warn,
         "aplay -l   # lists the sound cards the kernel knows; plug the card or USB microphone in"),
        (Access(user: "ps", uid: 995, inAudioGroup: false, audioGroupExists: false, devices: .usable), .warn,
         "sudo groupadd --system audio && sudo usermod -aG audio ps && sudo systemctl restart parlour-satellite"),
    ])
    func audioGroup(access: Access, status: DoctorCheck.Status, fix: String?) {
        let check = DoctorRules.audioGroup(access)
        #expect(check.status == status)
        #expect(check.fix == fix)
    }

    static let den = DoctorRules.InUse(url: "http://den.local:8765", name: "Parlour on den", how: .paired)
    static let configured = DoctorRules.InUse(url: "http://10.0.0.2:8765", name: "10.0.0.2", how: .configured)

    @Test("Bonjour: avahi-daemon, the servers seen, the pin")
    func bonjour() {
        #expect(DoctorRules.avahi(available: true, inUse: nil).status == .ok)
        #expect(DoctorRules.avahi(available: false, inUse: nil).status == .fail)
        #expect(DoctorRules.avahi(available: false, inUse: Self.den).status == .warn)
        #expect(DoctorRules.avahi(available: false, inUse: nil).fix == "sudo systemctl enable --now avahi-daemon")

        let seen = DoctorRules.serverSeen(available: true, seen: [("Parlour on den", "http://den.local:8765")], inUse: nil)
        #expect(seen == DoctorCheck(.serverSeen, .ok, "Bonjour sees one server: Parlour on den at http://den.local:8765."))
        #expect(DoctorRules.serverSeen(available: true, seen: [], inUse: nil).status == .fail)
        #expect(DoctorRules.serverSeen(available: true, seen: [], inUse: nil).fix == DoctorRules.pairFix)
        #expect(DoctorRules.serverSeen(available: true, seen: [], inUse: Self.den).status == .warn)
        #expect(DoctorRules.serverSeen(available: true, seen: [], inUse: Self.configured).status == .ok)
        #expect(DoctorRules.serverSeen(available: false, seen: [], inUse: Self.den).status == .warn)

        #expect(DoctorRules.serverPinned(nil) == DoctorCheck(.serverPinned, .fail,
            "No server is pinned, so the satellite has nobody to talk to.", fix: "parlourctl pair LINK   # run parlour pair on the server for the link"))
        let den = DoctorRules.serverPinned(Self.den)
        #expect(den.status == .warn)
        #expect(den.detail.hasPrefix("Parlour on den at http://den.local:8765, pinned (paired). It is plain http, so the token crosses the network in clear"))
        #expect(den.fix?.hasPrefix("parlourctl use https://HOST:PORT   # once Parlour is behind an https reverse proxy") == true)
        let configured = DoctorRules.serverPinned(Self.configured)
        #expect(configured.status == .warn && configured.detail.hasPrefix("server.url in the config names http://10.0.0.2:8765. It is plain http"))
        #expect(configured.fix?.hasPrefix("# set server.url in the config to https://HOST:PORT once") == true)
    }

    @Test("a pin that says nowhere fails, with what to run: use again, or see that the configured name resolves")
    func unplaced() {
        let pinned = DoctorRules.serverPinned(DoctorRules.InUse(url: "https://den.local:8443", name: "den", how: .manual, placed: false))
        #expect(pinned.status == .fail && pinned.detail.contains("no token") && pinned.fix == "parlourctl use https://den.local:8443")
        let configured = DoctorRules.serverPinned(DoctorRules.InUse(url: "https://den.local:8443", name: "den.local", how: .configured, placed: false))
        #expect(configured.status == .fail && configured.detail.contains("has not resolved"))
        #expect(configured.fix?.hasPrefix("getent hosts den.local") == true)
    }

    @Test("a move that waits fails, with what to run: use, or remove configured.json and restart")
    func moveWaits() {
        let waits = PinMoves.Decision.wait(from: ["10.0.0.2"], to: ["10.0.0.9"], by: .instance, why: "server.followMoves is false")
        let pinned = DoctorRules.serverPinned(DoctorRules.InUse(url: "https://den.local:8443", name: "den", how: .manual, move: waits))
        #expect(pinned.status == .fail && pinned.detail.contains("no longer answers at 10.0.0.2"))
        #expect(pinned.detail.contains("announces it at 10.0.0.9. It was not followed (server.followMoves is false)"))
        #expect(pinned.fix == "parlourctl use https://den.local:8443   # or pair again")
        let byName = PinMoves.Decision.wait(from: ["10.0.0.2"], to: ["10.0.0.9"], by: .name, why: "server.followMoves is false")
        let configured = DoctorRules.serverPinned(DoctorRules.InUse(url: "https://den.local:8443", name: "den.local", how: .configured,
                                                                    move: byName, configuredFile: "/var/lib/p/configured.json"))
        #expect(configured.status == .fail && configured.detail.contains("its name now resolves to it at 10.0.0.9"))
        #expect(configured.fix?.hasPrefix("rm /var/lib/p/configured.json && sudo systemctl restart parlour-satellite") == true)
        // A configured server's own instance seen elsewhere: the words say so, the fix is the configured one.
        let announced = DoctorRules.serverPinned(DoctorRules.InUse(url: "http://den.local:8765", name: "den.local", how: .configured,
                                                                   move: waits, configuredFile: "/var/lib/p/configured.json"))
        #expect(announced.detail.contains("its own Bonjour instance announces it at 10.0.0.9"))
        #expect(announced.fix?.hasPrefix("rm /var/lib/p/configured.json && sudo systemctl restart parlour-satellite") == true)
        let followed = DoctorRules.serverPinned(DoctorRules.InUse(url: "https://den.local:8443", name: "den", how: .manual,
                                                                  move: .follow(from: ["10.0.0.2"], to: ["10.0.0.9"], by: .instance)))
        #expect(followed.status == .ok)
    }

    @Test("plain http warns unless it stays on this machine; https is ok", arguments: [
        ("http://den.local:8765", true), ("http://10.0.0.2", true), ("http://[2001:db8::1]:8765", true),
        ("http://127.0.0.1:8765", false), ("http://localhost:8765", false), ("http://[::1]:8765", false),
        ("https://den.local:8443", false), ("HTTPS://den.local", false),
    ])
    func plainHTTP(url: String, warns: Bool) {
        #expect(DoctorRules.crossesInClear(url) == warns)
        let check = DoctorRules.serverPinned(DoctorRules.InUse(url: url, name: "den", how: .manual))
        #expect(check.status == (warns ? .warn : .ok))
    }

    static let stateToken = TokenSource.file(path: "/var/lib/parlour-satellite/token", kind: .state)
    static let credential = TokenSource.file(path: "/run/credentials/parlour-satellite.service/token", kind: .credential)

    @Test("the token: missing or refused fails with the pair fix, unless the server's token is systemd's credential")
    func token() {
        let missing = DoctorRules.token(source: nil, .noServer, url: nil)
        #expect(missing.status == .fail && missing.fix == DoctorRules.pairFix)
        #expect(DoctorRules.token(source: Self.stateToken, .noServer, url: nil).status == .warn)
        let accepted = DoctorRules.token(source: Self.stateToken, .accepted, url: "http://den.local:8765")
        #expect(accepted == DoctorCheck(.token, .ok,
            "The token (from /var/lib/parlour-satellite/token (the state folder)) goes to http://den.local:8765 alone, and /v1/models took it."))
        let refused = DoctorRules.token(source: Self.stateToken, .refused, url: "http://den.local:8765")
        #expect(refused.status == .fail && refused.fix == "parlourctl pair LINK   # run parlour pair on the server for the link")
        #expect(refused.detail == "http://den.local:8765 refused the token (from /var/lib/parlour-satellite/token (the state folder)).")
        let credential = DoctorRules.token(source: Self.credential, .refused, url: "http://den.local:8765")
        #expect(credential.fix == "systemctl cat parlour-satellite | grep LoadCredential   # this server's token comes from the file "
            + "it names: put the right token there, then sudo systemctl restart parlour-satellite (or pair, which gives it the link's token)")
        let none = DoctorRules.token(source: nil, .noneForServer, url: "http://attic.local:8765")
        #expect(none.status == .fail && none.detail.hasPrefix("http://attic.local:8765 was pinned with parlourctl use away from"))
        let unusable = DoctorRules.token(source: Self.stateToken, .unusable("The token from x cannot be a bearer token."), url: "http://den.local:8765")
        #expect(unusable.status == .fail && unusable.detail == "The token from x cannot be a bearer token.")
        let down = DoctorRules.token(source: .environment(name: "PARLOUR_TOKEN"), .unchecked("the server does not answer /health."),
                                     url: "http://den.local:8765")
        #expect(down.status == .warn)
        #expect(down.fix == "curl -sS http://den.local:8765/health   # is the server running, and reachable from here?")
    }

    @Test("the clock is sane from 2024 on, and not before the program was built")
    func clock() {
        let built = WallTime(seconds: 1_750_000_000)
        #expect(DoctorRules.clock(now: WallTime(seconds: 1_760_000_000), built: built).status == .ok)
        #expect(DoctorRules.clock(now: WallTime(seconds: 1_760_000_000), built: nil).status == .ok)
        let past = DoctorRules.clock(now: WallTime(seconds: 0), built: nil)
        #expect(past.status == .fail)
        #expect(past.detail.hasPrefix("The clock says 1970-01-01T00:00:00Z, before 2024"))
        #expect(DoctorRules.clock(now: WallTime(seconds: 1_720_000_000), built: built).status == .fail)
        // A saved time after the build, but before the server's certificate: the certificate tells.
        let behind = DoctorRules.clock(now: WallTime(seconds: 1_760_000_000), built: built, certificateRefused: true)
        #expect(behind.status == .fail)
        #expect(behind.detail.contains("not valid yet"))
        #expect(behind.fix?.hasPrefix("sudo timedatectl set-ntp true") == true)
    }

    @Test("the state folder")
    func stateFolder() {
        #expect(DoctorRules.stateFolder("/var/lib/p", user: "ps", failure: nil).status == .ok)
        let denied = DoctorRules.stateFolder("/var/lib/p", user: "ps", failure: ("Permission denied", EACCES))
        #expect(denied.status == .fail)
        #expect(denied.detail == "/var/lib/p cannot be written (Permission denied), so pairing and token set would fail.")
        #expect(denied.fix == "sudo install -d -m 0700 -o ps /var/lib/p && sudo systemctl restart parlour-satellite")
        let readOnly = DoctorRules.stateFolder("/var/lib/p", user: "ps", failure: ("Read-only file system", EROFS))
        #expect(readOnly.fix?.hasPrefix("findmnt -T /var/lib/p") == true)
    }

    @Test("the socket: 0660 and group parlour is ok; open to everyone fails; anything else warns")
    func socket() {
        let path = "/run/parlour-satellite/control.sock"
        let fix = "sudo chgrp parlour \(path) && sudo chmod 0660 \(path)   # or restart the unit, which sets both"
        #expect(DoctorRules.socket(path, mode: 0o660, group: "parlour", parlourGroupExists: true).status == .ok)
        let open = DoctorRules.socket(path, mode: 0o666, group: "parlour", parlourGroupExists: true)
        #expect(open.status == .fail && open.fix == fix)
        #expect(open.detail.contains("mode 0666, group parlour"))
        let root = DoctorRules.socket(path, mode: 0o660, group: "root", parlourGroupExists: true)
        #expect(root.status == .warn && root.fix == fix)
        #expect(DoctorRules.socket(path, mode: 0o600, group: "parlour", parlourGroupExists: true).status == .warn)
        let noGroup = DoctorRules.socket(path, mode: 0o660, group: "root", parlourGroupExists: false)
        #expect(noGroup.fix == "sudo groupadd --system parlour && sudo systemctl restart parlour-satellite")
    }

    @Test("the report prints a mark, the detail and a fix line; it exits 1 only when a check failed")
    func report() {
        let report = DoctorReport([
            DoctorCheck(.microphone, .ok, "testmic hears a signal."),
            DoctorCheck(.token, .fail, "No token.", fix: "parlourctl pair LINK"),
            DoctorCheck(.socket, .warn, "No group.", fix: "sudo groupadd parlour"),
        ])
        #expect(report.text(plain: false) == """
            ✓ microphone         testmic hears a signal.
            ✗ token              No token.
                                 fix: parlourctl pair LINK
            ! socket             No group.
                                 fix: sudo groupadd parlour

            1 failed, 1 warning, 1 ok.

            """)
        #expect(report.text(plain: true).hasPrefix("+ microphone         testmic hears a signal.\nx token "))
        #expect(report.exitCode == 1)
        #expect(DoctorReport(Array(report.checks.dropFirst(2))).exitCode == 0)
        #expect(DoctorReport(json: report.json) == report)

        let result = ControlResult.completed(report.json)
        #expect(result.exitCode == 0, "the request itself completed")
        #expect(ResultText.exitCode(.doctor, result) == 1)
        #expect(ResultText.exitCode(.status, result) == 0)
        #expect(ResultText.render(.doctor, result, json: true).out == result.json.text + "\n")
    }

    @Test("an ok check carries no fix")
    func okHasNoFix() {
        #expect(DoctorCheck(.clock, .ok, "fine", fix: "something").fix == nil)
        #expect(DoctorCheck(.clock, .ok, "fine").json["fix"] == .null)
    }

    @Test("doctor's help names every check, in order")
    func helpNamesChecks() throws {
        let help = try #require(ParlourctlCommandLine.helpText(for: "doctor"))
        // The names in order, with what says when a few of them run ("(these two with wake local)") left out.
        let flat = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            .replacing(/\s\([^)]*\)/, with: "")
        #expect(flat.contains(DoctorCheck.Name.allCases.map(\.rawValue).joined(separator: ", ")), "\(flat)")
    }

    @Test("the locale decides the marks", arguments: [
        (["LANG": "C.UTF-8"], false), (["LANG": "en_GB.utf8"], false), (["LANG": "C"], true), ([:], true),
        (["LC_ALL": "C", "LANG": "en_GB.UTF-8"], true), (["LC_ALL": "", "LC_CTYPE": "de_DE.UTF-8"], false),
    ])
    func marks(environment: [String: String], plain: Bool) {
        #expect(ResultText.prefersPlain(environment: environment) == plain)
    }
}
