// A self-signed certificate made at test time with Debian's openssl, as a
// self-signed reverse proxy in front of Parlour would have, and the SHA-256
// of its public key computed by openssl too (not by the code under test).
import Foundation
import TestSupport

struct TestCertificate: Sendable {
    let certificate: String
    let privateKey: String
    /// `sha256/<base64>` of the DER SubjectPublicKeyInfo, as pin.json holds it.
    let key: String

    /// A self-signed certificate whose subject's CN is `name`, with `subjectAltName` (as openssl's -addext spells it) when given.
    static func make(name: String = "den.local", subjectAltName: String? = nil) throws -> TestCertificate {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cert-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let certificate = dir + "/cert.pem", privateKey = dir + "/key.pem", digest = dir + "/key.sha256"
        try shell("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=\(name)"
                  + (subjectAltName.map { " -addext subjectAltName=\($0)" } ?? "")
                  + " -keyout \(privateKey) -out \(certificate) 2>/dev/null")
        try shell("openssl x509 -in \(certificate) -pubkey -noout | openssl pkey -pubin -outform der"
                  + " | openssl dgst -sha256 -binary | base64 > \(digest)")
        let key = try String(contentsOfFile: digest, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return TestCertificate(certificate: certificate, privateKey: privateKey, key: "sha256/" + key)
    }

    /// Through Spawn (waitpid), not Foundation's Process, whose wait once held both of the pool's threads.
    private static func shell(_ command: String) throws {
        try Spawn.run("bash", package: "bash", ["-c", "set -o pipefail; " + command])
    }
}
