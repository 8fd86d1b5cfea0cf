import Foundation
import Glibc

/// Secret and key files: read as bytes with one trailing newline removed
/// (API.md), or generated on first start under `DATA_DIR/secrets/` with mode
/// 0600 (the directory 0700). Generated secrets are 32 random bytes written as
/// 64 hex characters and a newline, so they can be pasted into a client.
enum Secrets {
    static let generatedHS256Name = "jwt-hs256.secret"
    static let generatedAPIKeyName = "internal-api.key"

    /// The file's bytes minus one trailing newline; failures name `flag`.
    static func read(_ path: String, flag: String) throws(Arguments.Failure) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Arguments.Failure(description: "--\(flag): cannot read '\(path)'")
        }
        var bytes = [UInt8](data)
        if bytes.last == 0x0A { bytes.removeLast() }
        guard !bytes.isEmpty else { throw Arguments.Failure(description: "--\(flag): '\(path)' is empty") }
        return bytes
    }

    /// The secret in `directory/name`, generating it when the file is absent.
    /// Returns the bytes and whether this call created the file.
    static func loadOrGenerate(directory: String, name: String) throws -> (bytes: [UInt8], path: String, created: Bool) {
        let path = directory + "/" + name
        if FileManager.default.fileExists(atPath: path) {
            return (try read(path, flag: name), path, false)
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        var random = [UInt8](repeating: 0, count: 32)
        guard getentropy(&random, random.count) == 0 else { throw Arguments.Failure(description: "no entropy source") }
        let text = random.map { String(format: "%02x", $0) }.joined()
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw Arguments.Failure(description: "cannot create '\(path)': \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let line = Array((text + "\n").utf8)
        guard write(fd, line, line.count) == line.count, fsync(fd) == 0 else {
            throw Arguments.Failure(description: "cannot write '\(path)': \(String(cString: strerror(errno)))")
        }
        return (Array(text.utf8), path, true)
    }
}
