import APNs
import APNsTestSupport
import COpenSSL
import Codecs
import Foundation
import JSON
import RegistrydTestSupport
import Testing

/// `ProviderKey` and the tokens `ProviderTokens` signs with it, checked
/// against the `openssl` CLI.
@Suite struct ProviderKeyTests {
    @Test func tokenIsAnES256JWTThatOpenSSLVerifies() async throws {
        let keys = await offThePool { TestKeys.shared }
        let tokens = try ProviderTokens(key: ProviderKey(contentsOf: keys.p256), teamId: "TEAM123456", keyId: "KEY1234567",
                                        now: { 1_700_000_000 })
        let parts = tokens.current().split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        #expect(Base64URL.decode(parts[0]).map { String(decoding: $0, as: UTF8.self) } == #"{"alg":"ES256","kid":"KEY1234567"}"#)
        #expect(Base64URL.decode(parts[1]).map { String(decoding: $0, as: UTF8.self) } == #"{"iss":"TEAM123456","iat":1700000000}"#)
        let signature = try #require(Base64URL.decode(parts[2]))
        #expect(signature.count == 64)
        let der = try #require(derSignature(raw: signature))
        let message = Array("\(parts[0]).\(parts[1])".utf8)
        #expect(await offThePool { keys.verify(message: message, derSignature: der) })
        let tampered = Array(message.dropLast()) + [message[message.count - 1] ^ 1]
        #expect(await !offThePool { keys.verify(message: tampered, derSignature: der) })
    }

    @Test func refusesWhatIsNotAP256PrivateKey() async throws {
        let keys = await offThePool { TestKeys.shared }
        let cases: [(String, String)] = [
            (keys.rsa, "RSA"),
            (keys.p384, "secp384r1"),
            (keys.p256Public, "public key"),
        ]
        for (path, expected) in cases {
            let error = #expect(throws: ProviderKeyError.self) { try ProviderKey(contentsOf: path) }
            #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
            #expect(error?.message.contains(path) == true)
        }
        let garbage = #expect(throws: ProviderKeyError.self) { try ProviderKey(pem: Array("not a key".utf8)) }
        #expect(garbage?.message.contains("no PEM private key") == true)
        let missing = #expect(throws: ProviderKeyError.self) { try ProviderKey(contentsOf: keys.directory + "/absent.p8") }
        #expect(missing?.message.contains("cannot read") == true)
    }

    @Test func aKeyFileOthersMayAccessIsRefusedWithTheChmodThatFixesIt() async throws {
        let keys = await offThePool { TestKeys.shared }
        let open = temporaryDirectory() + "/open.p8"
        try FileManager.default.copyItem(atPath: keys.p256, toPath: open)
        for mode in [0o644, 0o640, 0o604, 0o620] {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: open)
            let error = #expect(throws: ProviderKeyError.self) { try ProviderKey(contentsOf: open) }
            #expect(error?.message.contains("chmod 600 \(open)") == true && error?.message.contains(String(mode, radix: 8)) == true,
                    "\(error?.message ?? "")")
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: open)
        _ = try ProviderKey(contentsOf: open)
    }

    @Test func acceptsAP256KeyInSEC1Form() async throws {
        let keys = await offThePool { TestKeys.shared }
        _ = try ProviderKey(contentsOf: keys.sec1)
    }

    /// R||S as the DER `ECDSA-Sig-Value` `openssl dgst` reads.
    private func derSignature(raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64, let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = BN_bin2bn(raw, 32, nil)
        let s = raw[32...].withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else { return nil }
        let length = i2d_ECDSA_SIG(signature, nil)
        var der = [UInt8](repeating: 0, count: Int(length))
        _ = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return der
    }
}
