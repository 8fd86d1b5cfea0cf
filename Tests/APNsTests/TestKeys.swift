import APNsTestSupport
import Foundation

/// Key files made by the `openssl` CLI, once per test process, so the
/// keys the client loads were not made by the code under test.
struct TestKeys: Sendable {
    let directory: String
    var p256: String { directory + "/p256.p8" }
    var p256Public: String { directory + "/p256.pub.pem" }
    var p384: String { directory + "/p384.p8" }
    var rsa: String { directory + "/rsa.p8" }
    var sec1: String { directory + "/p256-sec1.pem" }

    static let shared: TestKeys = {
        let keys = TestKeys(directory: temporaryDirectory())
        for (path, options) in [(keys.p256, ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]),
                                (keys.p384, ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"]),
                                (keys.rsa, ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])] {
            precondition(shell(["openssl", "genpkey"] + options + ["-out", path]) != nil, "openssl genpkey failed")
        }
        precondition(shell(["openssl", "pkey", "-in", keys.p256, "-pubout", "-out", keys.p256Public]) != nil)
        precondition(shell(["openssl", "ec", "-in", keys.p256, "-out", keys.sec1]) != nil)
        // Key files are read only when private to their owner (the public key is refused for what it holds).
        for path in [keys.p256, keys.p256Public, keys.p384, keys.rsa, keys.sec1] { precondition(chmod(path, 0o600) == 0) }
        return keys
    }()

    /// Whether `openssl dgst` accepts `signature` (DER) over `message` with the P-256 public key.
    func verify(message: [UInt8], derSignature: [UInt8]) -> Bool {
        let messageFile = directory + "/message-" + UUID().uuidString
        let signatureFile = messageFile + ".sig"
        _ = FileManager.default.createFile(atPath: messageFile, contents: Data(message))
        _ = FileManager.default.createFile(atPath: signatureFile, contents: Data(derSignature))
        defer {
            try? FileManager.default.removeItem(atPath: messageFile)
            try? FileManager.default.removeItem(atPath: signatureFile)
        }
        return shell(["openssl", "dgst", "-sha256", "-verify", p256Public, "-signature", signatureFile, messageFile]) != nil
    }
}
