import JWT
import SecretFiles

/// The `.p8` key APNs provider tokens are signed with: a P-256 private key
/// in PEM (PKCS#8, as Apple issues it). Anything else (an RSA or P-384 key,
/// a public key, an encrypted key, text that is no key) is refused at load
/// with a `ProviderKeyError` that says which, so a wrong file stops the
/// process at start rather than at the first push.
///
/// A `SigningKey` (JWT's ES256 / RS256 signer) that is known to be ES256;
/// `ProviderTokens` signs with it through `JWTSigner.sign`.
public final class ProviderKey: Sendable {
    let signingKey: SigningKey

    /// Reads and checks the key file at `path`.
    public convenience init(contentsOf path: String) throws(ProviderKeyError) {
        let pem: [UInt8]
        do {
            pem = try SecretFile.read(path)
        } catch {
            guard case .openToGroupOrOthers = error.kind else {
                throw ProviderKeyError(message: "cannot read the APNs key file \(path)")
            }
            throw ProviderKeyError(message: "the APNs key file \(error)")
        }
        try self.init(pem: pem, source: path)
    }

    /// Checks PEM text; `source` names it in errors.
    public init(pem: [UInt8], source: String = "the APNs key") throws(ProviderKeyError) {
        let loaded: SigningKey
        do {
            loaded = try SigningKey(pem: pem, source: source)
        } catch {
            throw ProviderKeyError(message: Self.message(error, source: source))
        }
        guard loaded.algorithm == .es256 else {
            throw ProviderKeyError(message: "\(source) holds an RSA key; APNs needs a P-256 (ES256) key")
        }
        signingKey = loaded
    }

    /// `SigningKey`'s refusal in APNs' words.
    private static func message(_ error: SigningKeyError, source: String) -> String {
        switch error.reason {
        case .publicKey:
            "\(source) holds a public key; APNs needs the private key (.p8)"
        case .encrypted:
            "\(source) holds an encrypted private key; APNs needs the unencrypted .p8"
        case .noPrivateKey:
            "\(source) holds no PEM private key (a .p8 begins with -----BEGIN PRIVATE KEY-----)"
        case .unsupportedKeyType(let type):
            "\(source) holds an \(type) key; APNs needs a P-256 (ES256) key"
        case .rsaTooSmall:
            "\(source) holds an RSA key; APNs needs a P-256 (ES256) key"
        case .unsupportedCurve(let name):
            "\(source) holds an EC key on \(name.isEmpty ? "an unknown curve" : name); APNs needs P-256 (ES256)"
        case .unreadable:
            error.message
        }
    }
}

/// Why a provider key file was refused.
public struct ProviderKeyError: Error, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
