import JSON
import JWT
import SecretFiles

/// A Google service-account file (the JSON Firebase's console downloads):
/// who the registry is to Google's token endpoint and which Firebase project
/// an app's Android tokens belong to. Members used: `type`
/// (`service_account`), `project_id`, `private_key_id`, `private_key` (RSA,
/// PEM), `client_email`, `token_uri`.
///
/// A file that is not such JSON, holds no RSA private key, or that group or
/// others can read is refused at load with a `ServiceAccountError` naming
/// it, so a wrong file stops `serve` at start rather than at the first push.
public struct ServiceAccount: Sendable {
    public let projectId: String
    public let privateKeyId: String
    public let clientEmail: String
    /// Where the file says access tokens come from (`--fcm-token-url` overrides it).
    public let tokenURI: String
    /// The RSA key assertions are signed with (RS256).
    public let key: SigningKey
    /// The file it was read from, for messages.
    public let source: String

    /// Reads and checks the file at `path`.
    public init(contentsOf path: String) throws(ServiceAccountError) {
        let json: [UInt8]
        do {
            json = try SecretFile.read(path)
        } catch {
            guard case .openToGroupOrOthers = error.kind else {
                throw ServiceAccountError("cannot read the service-account file \(path)")
            }
            throw ServiceAccountError("the service-account file \(error)")
        }
        try self.init(json: json, source: path)
    }

    /// Checks the file's text; `source` names it in errors.
    public init(json: [UInt8], source: String) throws(ServiceAccountError) {
        guard case .object(let object)? = try? JSONParser.parse(json) else {
            throw ServiceAccountError("\(source) is not a Google service-account file (not a JSON object)")
        }
        func member(_ name: String) throws(ServiceAccountError) -> String {
            guard case .string(let value)? = object[name], !value.isEmpty else {
                throw ServiceAccountError("\(source) is not a Google service-account file: \(name) is missing")
            }
            return value
        }
        guard try member("type") == "service_account" else {
            throw ServiceAccountError("\(source) is not a Google service-account file: type is not service_account")
        }
        projectId = try member("project_id")
        guard projectId.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D }) else {
            throw ServiceAccountError("\(source): project_id '\(projectId)' is not a Firebase project id (lowercase letters, digits, '-')")
        }
        privateKeyId = try member("private_key_id")
        clientEmail = try member("client_email")
        tokenURI = try member("token_uri")
        let pem = try member("private_key")
        do {
            key = try SigningKey(pem: Array(pem.utf8), source: "\(source)'s private_key")
        } catch {
            throw ServiceAccountError(error.message)
        }
        guard key.algorithm == .rs256 else {
            throw ServiceAccountError("\(source)'s private_key is not an RSA key (Google signs service accounts with RS256)")
        }
        self.source = source
    }
}

/// Why a service-account file was refused.
public struct ServiceAccountError: Error, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { message }

    public init(_ message: String) { self.message = message }
}
