// The control socket's request codec: the version check INTERFACE.md promises
// (another `v` is unsupported_version, naming the versions spoken), and the
// callback and wait fields of listen and ask.
import Foundation
import Testing
import SatelliteCore

@Suite("the control protocol's requests")
struct ControlProtocolTests {
    static func decode(_ line: String) -> Result<ControlRequest, ControlRejection> {
        ControlProtocol.decode(Array(line.utf8))
    }

    static func refusal(_ line: String) -> SatelliteError? {
        guard case .failure(let rejection) = decode(line) else { return nil }
        return rejection.error
    }

    @Test("v 1, written as a whole number, is spoken", arguments: [
        #"{"v":1,"id":"a","cmd":"status"}"#, #"{"v":1.0,"id":"a","cmd":"status"}"#, #"{"cmd":"status","id":"a","v":1e0}"#,
    ])
    func spoken(line: String) throws {
        let request = try Self.decode(line).get()
        #expect(request.command == .status)
        #expect(request.id == "a")
    }

    @Test("another v is unsupported_version naming the versions spoken, with the caller's id", arguments: [
        (#"{"v":2,"id":"a","cmd":"status"}"#, "Version 2 "),
        (#"{"v":"1","id":"a","cmd":"status"}"#, #"Version "1" "#),
        (#"{"v":1.5,"id":"a","cmd":"status"}"#, "Version 1.5 "),
        (#"{"v":0,"id":"a","cmd":"status"}"#, "Version 0 "),
        (#"{"v":null,"id":"a","cmd":"status"}"#, "Version null "),
        (#"{"v":[1],"id":"a","cmd":"status"}"#, "Version [1] "),
        (#"{"v":true,"id":"a","cmd":"status"}"#, "Version true "),
    ])
    func unsupported(line: String, names: String) {
        guard case .failure(let rejection) = Self.decode(line) else {
            Issue.record("\(line) was taken")
            return
        }
        #expect(rejection.id == "a")
        #expect(rejection.error.code == .unsupportedVersion)
        #expect(rejection.error.message == "\(names)is not spoken here; this daemon speaks version 1.")
    }

    @Test("a request with no v at all is invalid_request, which says the version to add")
    func missing() {
        let error = Self.refusal(#"{"id":"a","cmd":"status"}"#)
        #expect(error?.code == .invalidRequest)
        #expect(error?.message == #"The request has no "v"; this daemon speaks version 1: add "v": 1."#)
    }

    @Test("the version is checked before the command, so an old daemon says unsupported_version for a new one")
    func versionFirst() {
        #expect(Self.refusal(#"{"v":2,"id":"a","cmd":"fly"}"#)?.code == .unsupportedVersion)
        #expect(Self.refusal(#"{"v":1,"id":"a","cmd":"fly"}"#)?.code == .unknownCommand)
    }

    @Test("fields a reader does not know are ignored")
    func additive() throws {
        let request = try Self.decode(#"{"v":1,"id":7,"cmd":"version","someday":{"x":1}}"#).get()
        #expect(request.command == .version)
        #expect(request.id == 7)
    }

    @Test("listen and ask take a callback and wait, and encode them as they decode")
    func callback() throws {
        let url = try CallbackURL.parse("http://127.0.0.1:9/cb?ctx=abc&n=1").get()
        for command in [ControlCommand.listen(hold: false), .listen(hold: true), .ask(text: "hi")] {
            for wait in [true, false] {
                let line = ControlProtocol.encode(command, id: "x", callback: url, wait: wait)
                #expect(try Self.decode(line).get() == ControlRequest(id: "x", command: command, callback: url, wait: wait))
            }
        }
        let plain = try Self.decode(ControlProtocol.encode(.listen(hold: false), id: "p")).get()
        #expect(plain.callback == nil)
        #expect(plain.wait)
        #expect(!ControlProtocol.encode(.listen(hold: false), id: "p").contains("wait"))
    }

    @Test("a callback that cannot be used is invalid_request before anything runs", arguments: [
        (#"{"v":1,"id":"a","cmd":"ask","text":"hi","callback":"file:///etc/passwd"}"#, "http:// or https://"),
        (#"{"v":1,"id":"a","cmd":"listen","callback":"ftp://h/x"}"#, "http:// or https://"),
        (#"{"v":1,"id":"a","cmd":"listen","callback":42}"#, "a number"),
        (#"{"v":1,"id":"a","cmd":"status","callback":"http://h/cb"}"#, "listen and ask only"),
        (#"{"v":1,"id":"a","cmd":"listen","wait":false}"#, "needs a \"callback\""),
        (#"{"v":1,"id":"a","cmd":"listen","callback":"http://h/cb","wait":"no"}"#, "true or false"),
        (#"{"v":1,"id":"a","cmd":"ask","text":"hi","callback":"http://h/cb?status=1"}"#, "\"status\""),
    ])
    func badCallback(line: String, says: String) {
        let error = Self.refusal(line)
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains(says) == true, "\(error?.message ?? "taken")")
    }

    @Test("the accepted answer of a request that does not wait reads as accepted")
    func accepted() {
        let text = ResultText.render(.listen(hold: false), .completed(["accepted": true, "id": "1"]), json: false)
        #expect(text.out == "Accepted: the satellite will call the callback URL when the request ends.\n")
        #expect(ResultText.render(.ask(text: "hi"), .completed(["accepted": true, "id": "1"]), json: true).out
                == #"{"response":{"accepted":true,"id":"1"},"status":"completed"}"# + "\n")
    }

    @Test("meter takes seconds and processed, and encodes them as it decodes")
    func meter() throws {
        for command in [ControlCommand.meter(seconds: 5), .meter(seconds: 3, processed: true)] {
            #expect(try Self.decode(ControlProtocol.encode(command, id: "m")).get().command == command)
        }
        #expect(try Self.decode(#"{"v":1,"id":"m","cmd":"meter"}"#).get().command == .meter(seconds: 5, processed: false))
        #expect(Self.refusal(#"{"v":1,"id":"m","cmd":"meter","processed":"yes"}"#)?.message == #""processed" must be true or false, not a string."#)
    }
}
