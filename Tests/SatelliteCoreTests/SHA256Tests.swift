import Foundation
import Testing
import TestSupport
@testable import SatelliteCore

// Off the pool: one case waits on openssl.
@Suite("SHA-256 and HMAC-SHA256 for siblings' claims", .offThePool)
struct SHA256Tests {
    static func hex(_ bytes: [UInt8]) -> String { HouseKeys.hex(bytes) }

    // FIPS 180-4's examples (the empty string's is sha256sum's), and lengths across the 55-, 56- and 64-byte padding edges.
    @Test("the digests agree with FIPS 180-4's and sha256sum's, across the padding's edges", arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        (String(repeating: "a", count: 55), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"),
        (String(repeating: "a", count: 56), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"),
        (String(repeating: "a", count: 63), "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"),
        (String(repeating: "a", count: 64), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"),
        (String(repeating: "a", count: 1000), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"),
    ])
    func digests(text: String, expected: String) {
        #expect(Self.hex(SHA256.digest(Array(text.utf8))) == expected)
    }

    // RFC 4231, test cases 1, 2, 3, 4, 6 and 7 (5 truncates the tag, which nothing here does).
    @Test("HMAC-SHA256 agrees with RFC 4231", arguments: [
        ([UInt8](repeating: 0x0B, count: 20), Array("Hi There".utf8),
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        ([UInt8](repeating: 0xAA, count: 20), [UInt8](repeating: 0xDD, count: 50),
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        (Array(1...25), [UInt8](repeating: 0xCD, count: 50),
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        ([UInt8](repeating: 0xAA, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        ([UInt8](repeating: 0xAA, count: 131),
         Array(("This is a test using a larger than block-size key and a larger than block-size data."
                + " The key needs to be hashed before being used by the HMAC algorithm.").utf8),
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ])
    func hmac(key: [UInt8], message: [UInt8], expected: String) {
        #expect(Self.hex(SHA256.hmac(key: key, message)) == expected)
    }

    @Test("HMAC-SHA256 agrees with openssl dgst on random keys and messages of every length to 200 bytes")
    func agreesWithOpenSSL() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sha256-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var random = SeededGenerator(seed: 0x5A5A)
        var ours: [String] = []
        var paths: [String] = []
        for length in stride(from: 0, through: 200, by: 7) {
            let message = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let path = folder.appendingPathComponent("m\(length)").path
            try Data(message).write(to: URL(fileURLWithPath: path))
            paths.append(path)
            // openssl takes the key as hex, so any bytes can be one.
            ours.append(Self.hex(SHA256.hmac(key: Array("0123456789abcdef".utf8) + [0x00, 0xFF], message)))
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["dgst", "-sha256", "-mac", "HMAC", "-macopt",
                             "hexkey:" + Self.hex(Array("0123456789abcdef".utf8) + [0x00, 0xFF]), "-r"] + paths
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let theirs = text.split(separator: "\n").map { String($0.prefix(64)) }
        #expect(theirs == ours)
    }

    @Test("tags are equal only when every byte is")
    func equal() {
        #expect(SHA256.equal([1, 2, 3], [1, 2, 3]))
        #expect(!SHA256.equal([1, 2, 3], [1, 2, 4]))
        #expect(!SHA256.equal([1, 2, 3], [1, 2]))
        #expect(SHA256.equal([], []))
    }
}
