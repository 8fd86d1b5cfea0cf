import Foundation
import TokenSealing

/// The token keys of an environment registry-bench writes: the key file
/// `registryd` itself would use for it, so a loaded data directory serves
/// as it is, and a child's environment reopens in the parent.
enum BenchKeys {
    /// `DIR/secrets/token-keys` for `DIR/lmdb` (registryd's layout), else `DIR.token-keys` beside it.
    static func path(forEnvironment directory: String) -> String {
        let url = URL(fileURLWithPath: directory).standardizedFileURL
        if url.lastPathComponent == "lmdb" {
            return url.deletingLastPathComponent().appendingPathComponent("secrets/token-keys").path
        }
        return url.path + ".token-keys"
    }

    static func ring(forEnvironment directory: String) throws -> TokenKeyRing {
        try TokenKeyFile.loadOrGenerate(path: path(forEnvironment: directory)).ring
    }

    /// `DIR/secrets/token-keys` of a registryd data directory whose store is not in it (PostgreSQL).
    static func ring(forDataDirectory directory: String) throws -> TokenKeyRing {
        let secrets = URL(fileURLWithPath: directory).standardizedFileURL.appendingPathComponent("secrets")
        try FileManager.default.createDirectory(at: secrets, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        return try TokenKeyFile.loadOrGenerate(path: secrets.appendingPathComponent("token-keys").path).ring
    }
}
