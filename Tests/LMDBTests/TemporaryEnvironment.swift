import Foundation
import LMDB

/// A fresh directory under the system temporary directory for one test, removed when the test's body ends.
///
/// Every test gets its own directory, so tests share no state and can run in parallel.
struct TemporaryDirectory {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "lmdb-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// A path inside this directory that does not exist yet.
    func child(_ name: String) -> String { path + "/" + name }

    func remove() { try? FileManager.default.removeItem(atPath: path) }

    /// Runs `body` with a fresh directory and removes it afterwards, even when `body` throws.
    static func with<T>(_ body: (TemporaryDirectory) throws -> T) throws -> T {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        return try body(directory)
    }
}

/// Opens an environment with database "main" in a fresh directory, runs `body`, closes it and removes the
/// directory. `configure` adjusts the configuration before opening.
@discardableResult
func withEnvironment<T>(configure: (inout Environment.Configuration) -> Void = { _ in },
                        _ body: (Environment, Database) throws -> T) throws -> T {
    try TemporaryDirectory.with { directory in
        var configuration = Environment.Configuration(path: directory.child("env"))
        configure(&configuration)
        let environment = try Environment(configuration)
        defer { environment.close() }
        let database = try environment.openDatabase("main")
        return try body(environment, database)
    }
}

/// Bytes of a string, for readable keys and values.
func b(_ string: String) -> [UInt8] { Array(string.utf8) }

/// Thrown by test bodies to force an abort.
struct Rollback: Error {}
