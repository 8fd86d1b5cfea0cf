import Foundation
import RegistrydTestSupport
import Testing

/// The documented way between the backends: `export` from one piped into
/// `import` on the other, each way; the registry arrives line for line.
extension PostgresStoreExecutableTests {
    @Test func anLMDBExportPipedIntoPostgresExportsTheSameLines() async throws {
        try await TestPostgres.withSchema { url in
            let directory = try exe.makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try await fill(try ExecutableTests.Server(arguments: Self.fillApps, directory: directory), in: directory)
            let (_, original, _) = try await exe.run(["export"], in: directory)
            let lines = original.split(separator: "\n").count

            let moved = try pipe(["export"], into: ["import"] + Self.postgres(url), in: directory)
            #expect(moved.statuses == [0, 0], "\(moved.stderr)")
            #expect(moved.stdout == "imported \(lines) records from \(lines) lines\n")
            let (exported, onPostgres, errors) = try await exe.run(["export"] + Self.postgres(url), in: directory)
            #expect(exported == 0, "\(errors)")
            let onPostgresDifference = Self.difference(onPostgres, original)
            #expect(onPostgresDifference.isEmpty, "every record, token, timestamp and event as exported: \(onPostgresDifference)")

            let (_, statsLMDB, _) = try await exe.run(["stats", "--json"], in: directory)
            let (_, statsPostgres, _) = try await exe.run(["stats", "--json"] + Self.postgres(url), in: directory)
            #expect(try OperationsTests.counts(statsPostgres) == OperationsTests.counts(statsLMDB))
            let (checked, checkOut, _) = try await exe.run(["check"] + Self.postgres(url), in: directory)
            #expect(checked == 0 && checkOut.hasSuffix("ok: the registry's invariants hold\n"), "\(checkOut)")

            let again = try pipe(["export"], into: ["import"] + Self.postgres(url), in: directory)
            #expect(again.statuses == [0, 0], "\(again.stderr)")
            let (_, twice, _) = try await exe.run(["export"] + Self.postgres(url), in: directory)
            let twiceDifference = Self.difference(twice, original)
            #expect(twiceDifference.isEmpty, "a second import changes nothing: \(twiceDifference)")
        }
    }

    @Test func aPostgresExportPipedIntoLMDBExportsTheSameLines() async throws {
        try await TestPostgres.withSchema { url in
            let directory = try exe.makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try await fill(try ExecutableTests.Server(arguments: Self.fillApps + Self.postgres(url), directory: directory), in: directory)
            let (_, original, _) = try await exe.run(["export"] + Self.postgres(url), in: directory)
            let lines = original.split(separator: "\n").count
            #expect(lines > 10)

            let moved = try pipe(["export"] + Self.postgres(url), into: ["import", "--data-dir", "moved",
                                                                         "--token-key-file", "registry-data/secrets/token-keys"],
                                 in: directory)
            #expect(moved.statuses == [0, 0], "\(moved.stderr)")
            #expect(moved.stdout == "imported \(lines) records from \(lines) lines\n")
            let (_, onLMDB, _) = try await exe.run(["export", "--data-dir", "moved", "--token-key-file", "registry-data/secrets/token-keys"],
                                             in: directory)
            let onLMDBDifference = Self.difference(onLMDB, original)
            #expect(onLMDBDifference.isEmpty, "every record, token, timestamp and event as exported: \(onLMDBDifference)")
            let (checked, checkOut, _) = try await exe.run(["check", "--data-dir", "moved", "--token-key-file", "registry-data/secrets/token-keys"],
                                                     in: directory)
            #expect(checked == 0, "\(checkOut)")
        }
    }

    /// The lines one export has and the other lacks (each backend writes
    /// one consistent snapshot in the order its own keys give, so lines are
    /// compared as a multiset); empty when they are the same lines.
    static func difference(_ export: String, _ expected: String) -> String {
        var counts: [Substring: Int] = [:]
        for line in export.split(separator: "\n") { counts[line, default: 0] += 1 }
        for line in expected.split(separator: "\n") { counts[line, default: 0] -= 1 }
        return counts.filter { $0.value != 0 }.map { "\($0.value > 0 ? "extra" : "missing"): \($0.key)" }.sorted()
            .joined(separator: "\n")
    }

    /// The apps `fill` registers under: the server that fills declares
    /// them; the commands after it do not (an import restores any app).
    static let fillApps = ["--apps", "com.example.watch"]

    /// Two users, an app family's second app, tokens of every kind (APNs in
    /// both environments, FCM), a rotation, a sign-out's tombstone, and the
    /// history all of that wrote; then stops the server.
    func fill(_ server: ExecutableTests.Server, in directory: String) async throws {
        try #require(server.port > 0, "\(server.log)")
        let alice = try await jwt("alice", in: directory), bob = try await jwt("bob", in: directory)
        func post(_ path: String, _ body: String, as user: String) async throws {
            let status = try await exe.request("POST", server.port, path, bearer: user, body: body).0
            #expect(status == 200 || status == 201, "\(path) \(body)")
        }
        for i in 0..<4 {
            try await post("/v1/devices", #"{"deviceId":"D\#(i)","pushToken":"\#(OperationsTests.hexToken(i))","osVersion":"18.2","appVersion":"2.1.0","sequence":1}"#, as: alice)
            try await post("/v1/devices/push-to-start-token", #"{"deviceId":"D\#(i)","token":"\#(OperationsTests.hexToken(100 + i))","environment":"sandbox"}"#, as: alice)
            try await post("/v1/activities/match-42/activity-token", #"{"deviceId":"D\#(i)","token":"\#(OperationsTests.hexToken(200 + i))"}"#, as: alice)
        }
        try await post("/v1/devices", #"{"deviceId":"D0","pushToken":"\#(OperationsTests.hexToken(50))"}"#, as: alice)
        try await post("/v1/devices", #"{"deviceId":"D0","appId":"com.example.watch","pushToken":"\#(OperationsTests.hexToken(60))"}"#, as: alice)
        #expect(try await exe.request("DELETE", server.port, "/v1/devices/D3?sequence=2", bearer: alice).0 == 204)
        for i in 0..<3 {
            try await post("/v1/devices", #"{"deviceId":"B\#(i)","platform":"fcm","pushToken":"fcm-token:\#(i)_x"}"#, as: bob)
        }
        #expect(server.stop() == 0)
    }

    /// `registryd <from> | registryd <to>` in `directory`, as a shell runs
    /// it (`Process.run` closes this process's ends of the link, so the
    /// second command sees the end of its input); both exit statuses, and the second command's stdout and stderr
    /// (with the first one's stderr before it). Both are killed after 20 s.
    func pipe(_ from: [String], into to: [String], in directory: String) throws
        -> (statuses: [Int32], stdout: String, stderr: String) {
        let producer = Registryd.process(from, in: directory), consumer = Registryd.process(to, in: directory)
        let link = Pipe(), out = Pipe(), producerErr = Pipe(), consumerErr = Pipe()
        producer.standardOutput = link
        producer.standardError = producerErr
        consumer.standardInput = link
        consumer.standardOutput = out
        consumer.standardError = consumerErr
        try producer.run()
        try consumer.run()
        let watchdog = DispatchWorkItem {
            for process in [producer, consumer] where process.isRunning { process.terminate() }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 20, execute: watchdog)
        defer { watchdog.cancel() }
        let firstErrors = producerErr.fileHandleForReading.readDataToEndOfFile()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let secondErrors = consumerErr.fileHandleForReading.readDataToEndOfFile()
        producer.waitUntilExit()
        consumer.waitUntilExit()
        return ([producer.terminationStatus, consumer.terminationStatus], String(decoding: stdout, as: UTF8.self),
                String(decoding: firstErrors + secondErrors, as: UTF8.self))
    }
}

/// The operator commands that change a registry in place, on PostgreSQL.
extension PostgresStoreExecutableTests {
    @Test func keyRotationAndSweepWorkOnPostgres() async throws {
        try await TestPostgres.withSchema { url in
            let directory = try exe.makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try await fill(try ExecutableTests.Server(arguments: Self.fillApps + Self.postgres(url), directory: directory), in: directory)
            let (_, before, _) = try await exe.run(["export"] + Self.postgres(url), in: directory)

            let (rotated, rotation, rotationErrors) = try await exe.run(["rotate-token-key"] + Self.postgres(url), in: directory)
            #expect(rotated == 0, "\(rotationErrors)")
            #expect(rotation.hasPrefix("added sealing key 2; every server holds it; re-sealed "), "\(rotation)")
            #expect(rotation.hasSuffix("; retired key 1\n"), "\(rotation)")
            let (_, after, _) = try await exe.run(["export"] + Self.postgres(url), in: directory)
            #expect(after == before, "every token opens under the new key")
            await #expect(try exe.run(["check"] + Self.postgres(url), in: directory).0 == 0)

            let (_, nothing, _) = try await exe.run(["sweep", "--dry-run"] + Self.postgres(url), in: directory)
            #expect(nothing == #"{"devices":0,"pushToStartTokens":0,"activityTokens":0,"tombstones":0}"# + "\n")
            try await Task.sleep(for: .seconds(1.1))
            let (swept, counts, sweepErrors) = try await exe.run(["sweep", "--device-ttl", "1s", "--activity-ttl", "1s"] + Self.postgres(url),
                                                            in: directory)
            #expect(swept == 0, "\(sweepErrors)")
            #expect(counts.hasPrefix(#"{"devices":7,"#), "\(counts)")
            let (_, stats, _) = try await exe.run(["stats", "--json"] + Self.postgres(url), in: directory)
            #expect(try OperationsTests.counts(stats)["devices"] == 0)
        }
    }
}
