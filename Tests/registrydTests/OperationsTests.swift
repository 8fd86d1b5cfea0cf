import Foundation
import Glibc
import RegistrydTestSupport
import Testing

/// The operator's paths through the built `registryd`, as an on-call
/// engineer takes them: help, one server per data directory, backups that
/// restore, export → import into a new registry, progress on a terminal,
/// and systemd's readiness notification.
@Suite(.serialized) struct OperationsTests {
    let exe = ExecutableTests()
    static let subcommands = ["serve", "mint-token", "stats", "sweep", "backup", "check", "export", "import",
                              "rotate-token-key"]

    // MARK: Help

    @Test func helpIsPrintedToStdoutForEveryForm() async throws {
        let directory = try exe.makeDirectory()
        for form in [["help"], ["--help"], ["-h"]] {
            let (status, stdout, stderr) = try await exe.run(form, in: directory)
            #expect(status == 0, "\(form)")
            #expect(stderr.isEmpty, "\(form)")
            #expect(stdout.hasPrefix("usage: registryd"), "\(form)")
            for name in Self.subcommands { #expect(stdout.contains("  \(name) "), "\(form) lists \(name)") }
        }
        for name in Self.subcommands {
            for form in [[name, "--help"], ["help", name], [name, "--data-dir", "x", "-h"]] {
                let (status, stdout, stderr) = try await exe.run(form, in: directory)
                #expect(status == 0, "\(form)")
                #expect(stderr.isEmpty, "\(form)")
                #expect(stdout.hasPrefix("usage: registryd \(name) "), "\(form)")
                #expect(stdout.contains("\nflags:\n"), "\(form)")
                #expect(stdout.contains("\nexample:\n  registryd "), "\(form)")
            }
        }
        // Help never touches the data directory.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test func helpListsEachFlagWithItsVariableAndDefault() async throws {
        let (_, serve, _) = try await exe.run(["serve", "--help"], in: try exe.makeDirectory())
        #expect(serve.contains("  --data-dir DIR\n"))
        #expect(serve.contains("env: REGISTRY_DATA_DIR"))
        #expect(serve.contains("(default: 127.0.0.1:8080)"))
        #expect(serve.contains("env: REGISTRY_MAX_CONNECTIONS_PER_ADDRESS"))
        let (_, backup, _) = try await exe.run(["backup", "--help"], in: try exe.makeDirectory())
        #expect(backup.contains("  --with-secrets\n"))
        #expect(!backup.contains("REGISTRY_TO\n"), "a per-run flag reads no variable")
        #expect(!backup.contains("--listen"), "help lists only the command's own flags")
    }

    @Test(arguments: subcommands)
    func anUnknownFlagIsNamedAndPointsToHelp(_ name: String) async throws {
        let directory = try exe.makeDirectory()
        let (status, stdout, stderr) = try await exe.run([name, "--bogus"], in: directory)
        #expect(status == 2)
        #expect(stdout.isEmpty)
        #expect(stderr == "registryd \(name): unknown flag --bogus; see 'registryd \(name) --help'\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test func versionIsPrintedAndTouchesNothing() async throws {
        let directory = try exe.makeDirectory()
        let (status, stdout, stderr) = try await exe.run(["--version"], in: directory)
        #expect(status == 0)
        #expect(stderr.isEmpty)
        #expect(stdout.wholeMatch(of: /registryd \d+\.\d+\.\d+\n/) != nil, "\(stdout)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    /// The example is what a reader copies: a log line with the log's own
    /// keys, and a long command that stays one command on several lines.
    @Test func serveHelpsExampleMatchesTheRealLogAndShell() async throws {
        let (_, serve, _) = try await exe.run(["serve", "--help"], in: try exe.makeDirectory())
        #expect(serve.contains(#"{"ts":"#) && serve.contains(#""level":"info","event":"listening","address":"#))
        #expect(!serve.contains(#""msg":"#))
        #expect(serve.contains("target_session_attrs=read-write' \\\n    --token-key-file"), "\(serve)")
    }

    @Test func anUnknownSubcommandPointsToHelp() async throws {
        let (status, _, stderr) = try await exe.run(["restore"], in: try exe.makeDirectory())
        #expect(status == 2)
        #expect(stderr == "registryd: unknown subcommand 'restore'; see 'registryd --help'\n")
    }

    // MARK: One server per data directory

    @Test func aSecondServerOnOneDataDirectoryIsRefusedWhileSubcommandsStillWork() async throws {
        let directory = try exe.makeDirectory()
        let first = try await ExecutableTests.Server(arguments: [], directory: directory)
        #expect(first.port != 0)
        let (status, _, stderr) = try await exe.run(["serve", "--listen", "127.0.0.1:0"], in: directory)
        #expect(status == 2)
        #expect(stderr.contains("is served by registryd pid \(first.process.processIdentifier)"), "\(stderr)")
        for command in [["stats"], ["check"], ["export"], ["sweep", "--dry-run"]] {
            let (status, _, stderr) = try await exe.run(command, in: directory)
            #expect(status == 0, "\(command): \(stderr)")
        }
        let (health, _) = try await exe.request("GET", first.port, "/healthz")
        #expect(health == 200, "the refused second server left the first one serving")
        #expect(first.stop() == 0)
        // The lock goes with the process: a new server starts at once.
        let second = try await ExecutableTests.Server(arguments: [], directory: directory)
        #expect(second.port != 0, "\(second.log)")
        #expect(second.stop() == 0)
    }

    @Test func aServerKilledWithSIGKILLLeavesNoLockBehind() async throws {
        let directory = try exe.makeDirectory()
        let first = try await ExecutableTests.Server(arguments: [], directory: directory)
        #expect(first.port != 0)
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()
        let second = try await ExecutableTests.Server(arguments: [], directory: directory)
        #expect(second.port != 0, "\(second.log)")
        #expect(second.stop() == 0)
    }

    // MARK: Backups

    @Test func aBackupTakenUnderConcurrentWritesRestoresAndPassesCheck() async throws {
        let directory = try exe.makeDirectory()
        let server = try await ExecutableTests.Server(arguments: [], directory: directory)
        let port = server.port
        let key = try String(contentsOfFile: directory + "/registry-data/secrets/internal-api.key", encoding: .utf8)
            .trimmingCharacters(in: .newlines)
        let (_, minted, _) = try await exe.run(["mint-token", "--user", "alice"], in: directory)
        let jwt = minted.trimmingCharacters(in: .newlines)

        let writes = Task { [exe] in
            var acknowledged = 0
            for i in 0..<400 {
                if Task.isCancelled { break }
                let body = #"{"deviceId":"D\#(i)","pushToken":"\#(Self.hexToken(i))","osVersion":"18.2","appVersion":"2.1.0"}"#
                let (status, _) = try await exe.request("POST", port, "/v1/devices", bearer: jwt, body: body)
                if status == 200 || status == 201 { acknowledged += 1 }
            }
            return acknowledged
        }
        try await Task.sleep(for: .milliseconds(300))
        let (status, stdout, stderr) = try await exe.run(["backup", "--to", "bk"], in: directory)
        let acknowledged = try await writes.value
        #expect(status == 0, "\(stderr)")
        #expect(stdout.hasPrefix("backup written to bk: "), "\(stdout)")
        #expect(acknowledged == 400)
        #expect(server.stop() == 0)

        // A data directory as it is: 0700 folders, a 0600 copy, a manifest, no secrets.
        #expect(try Self.mode(directory + "/bk") == 0o700)
        #expect(try Self.mode(directory + "/bk/lmdb") == 0o700)
        #expect(try Self.mode(directory + "/bk/lmdb/data.mdb") == 0o600)
        #expect(!FileManager.default.fileExists(atPath: directory + "/bk/secrets"))
        // Without secrets the copy's tokens open only with the original key file.
        let keys = ["--token-key-file", "registry-data/secrets/token-keys"]
        // Without the key file an operator command writes nothing into the backup and says the file is missing.
        let (refused, _, refusal) = try await exe.run(["check", "--data-dir", "bk"], in: directory)
        #expect(refused == 2)
        #expect(refusal.contains("the token key file 'bk/secrets/token-keys' is missing"), "\(refusal)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/bk/secrets"), "no secrets folder was made in the backup")
        // Counts open no token: stats works without the key file.
        let (statsStatus, counts, countNote) = try await exe.run(["stats", "--json", "--data-dir", "bk"], in: directory)
        #expect(statsStatus == 0 && counts.contains(#""devices":"#), "\(counts)\(countNote)")
        #expect(countNote.contains("no token key file at 'bk/secrets/token-keys'"), "\(countNote)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/bk/secrets"))
        let (checkStatus, checkOut, _) = try await exe.run(["check", "--data-dir", "bk"] + keys, in: directory)
        #expect(checkStatus == 0, "\(checkOut)")

        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/bk/backup.json"))) as? [String: Any]
        #expect(manifest?["format"] as? String == "registryd-backup")
        #expect(manifest?["schemaVersion"] as? Int == 7)
        let counted = ((manifest?["stats"] as? [String: Any])?["counts"] as? [String: Any])?["devices"] as? Int
        let (_, stats, _) = try await exe.run(["stats", "--json", "--data-dir", "bk"] + keys, in: directory)
        let restoredCount = ((try JSONSerialization.jsonObject(with: Data(stats.utf8)) as? [String: Any])?["counts"] as? [String: Any])?["devices"] as? Int
        #expect(counted != nil && counted == restoredCount, "the manifest counts the copy itself")
        #expect((counted ?? 0) > 0 && (counted ?? 0) <= 400)

        // Restore: serve the backup with the original internal key; every device the copy counted answers.
        let restored = try await ExecutableTests.Server(
            arguments: ["--data-dir", "bk", "--internal-api-key-file", "registry-data/secrets/internal-api.key"] + keys,
            directory: directory)
        let (lookup, body) = try await exe.request("GET", restored.port, "/internal/v1/users/alice/devices", bearer: key)
        #expect(lookup == 200)
        #expect(body.components(separatedBy: "\"deviceId\"").count - 1 == min(counted ?? 0, 20),
                "the device cap (20) bounds what one user keeps")
        #expect(restored.stop() == 0)
    }

    @Test func aBackupRefusesANonEmptyTargetAndCopiesSecretsOnlyWhenAsked() async throws {
        let directory = try exe.makeDirectory()
        let (minted, _, _) = try await exe.run(["mint-token", "--user", "u"], in: directory)  // generates the secret
        #expect(minted == 0)
        // mint-token made the secrets but no registry yet: serve once to create it.
        let server = try await ExecutableTests.Server(arguments: [], directory: directory)
        #expect(server.stop() == 0)

        try FileManager.default.createDirectory(atPath: directory + "/full", withIntermediateDirectories: true)
        try Data("x".utf8).write(to: URL(fileURLWithPath: directory + "/full/keep.txt"))
        let (refused, _, refusal) = try await exe.run(["backup", "--to", "full"], in: directory)
        #expect(refused == 2)
        #expect(refusal.contains("--to: 'full' is not empty"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/full") == ["keep.txt"])

        let (status, stdout, stderr) = try await exe.run(["backup", "--to", "with", "--with-secrets"], in: directory)
        #expect(status == 0, "\(stderr)")
        #expect(stdout.contains("secrets copied: internal-api.key, jwt-hs256.secret, operator.key, token-keys"))
        for name in ["internal-api.key", "jwt-hs256.secret", "operator.key", "token-keys"] {
            #expect(try Self.mode(directory + "/with/secrets/" + name) == 0o600)
            #expect(FileManager.default.contents(atPath: directory + "/with/secrets/" + name)
                    == FileManager.default.contents(atPath: directory + "/registry-data/secrets/" + name))
        }
        let manifest = try String(contentsOfFile: directory + "/with/backup.json", encoding: .utf8)
        #expect(manifest.contains(#""secretsIncluded":["internal-api.key","jwt-hs256.secret","operator.key","token-keys"]"#))
        // With its secrets, the backup serves as it is.
        let (checked, _, checkErr) = try await exe.run(["check", "--data-dir", "with"], in: directory)
        #expect(checked == 0, "\(checkErr)")
    }

    // MARK: Export and import

    @Test func exportImportIntoAnEmptyDirectoryReproducesTheRegistryAndASecondImportChangesNothing() async throws {
        let directory = try exe.makeDirectory()
        try await fillRegistry(directory)
        let (exported, original, _) = try await exe.run(["export"], in: directory)
        #expect(exported == 0)
        try original.write(toFile: directory + "/e.jsonl", atomically: true, encoding: .utf8)

        let (first, firstOut, firstErr) = try await exe.run(["import", "--data-dir", "moved", "--from", "e.jsonl"], in: directory)
        #expect(first == 0, "\(firstErr)")
        let lines = original.split(separator: "\n").count
        #expect(firstOut == "imported \(lines) records from \(lines) lines\n")
        let (_, movedExport, _) = try await exe.run(["export", "--data-dir", "moved"], in: directory)
        #expect(movedExport == original, "every record, token and timestamp as exported")
        let (_, statsBefore, _) = try await exe.run(["stats", "--json"], in: directory)
        let (_, statsMoved, _) = try await exe.run(["stats", "--json", "--data-dir", "moved"], in: directory)
        #expect(try Self.counts(statsBefore) == Self.counts(statsMoved))

        let (second, _, secondErr) = try await exe.run(["import", "--data-dir", "moved", "--from", "e.jsonl"], in: directory)
        #expect(second == 0, "\(secondErr)")
        let (_, againExport, _) = try await exe.run(["export", "--data-dir", "moved"], in: directory)
        #expect(againExport == original, "a second import changes nothing")
        let (checked, checkOut, _) = try await exe.run(["check", "--data-dir", "moved"], in: directory)
        #expect(checked == 0, "\(checkOut)")
    }

    @Test func aBadLineIsReportedByNumberAndTheGoodOnesAreImported() async throws {
        let directory = try exe.makeDirectory()
        try await fillRegistry(directory)
        let (_, original, _) = try await exe.run(["export"], in: directory)
        var lines = original.split(separator: "\n").map(String.init)
        let good = lines.count
        lines.insert(#"{"device":{"userId":"","deviceId":"x"}}"#, at: 1)
        lines.append("not json")
        try (lines.joined(separator: "\n") + "\n").write(toFile: directory + "/e.jsonl", atomically: true, encoding: .utf8)

        let (status, stdout, stderr) = try await exe.run(["import", "--data-dir", "fresh", "--from", "e.jsonl"], in: directory)
        #expect(status == 1)
        #expect(stdout.isEmpty)
        #expect(stderr.contains("line 2: "), "\(stderr)")
        #expect(stderr.contains("line \(good + 2): record is not JSON"), "\(stderr)")
        #expect(stderr.contains("imported \(good) records from \(good + 2) lines; 2 bad lines skipped"), "\(stderr)")
        let (_, imported, _) = try await exe.run(["export", "--data-dir", "fresh"], in: directory)
        #expect(imported == original)
    }

    // MARK: Token key rotation

    /// `rotate-token-key` beside a running server taking writes from
    /// several users: no acknowledged write is lost, every token ends up
    /// under the new key (the check afterwards holds only that key, so any
    /// value under the old one would not open), and the old key is retired.
    @Test func aKeyRotationUnderConcurrentWritesLosesNothingAndLeavesOnlyTheNewKey() async throws {
        let directory = try exe.makeDirectory()
        let server = try await ExecutableTests.Server(arguments: [], directory: directory)
        let port = server.port
        let key = try String(contentsOfFile: directory + "/registry-data/secrets/internal-api.key", encoding: .utf8)
            .trimmingCharacters(in: .newlines)
        var jwts: [String] = []
        for user in 0..<10 {
            await jwts.append(try exe.run(["mint-token", "--user", "user\(user)"], in: directory).1.trimmingCharacters(in: .newlines))
        }
        let tokens = jwts
        let writes = Task { [exe] in
            var acknowledged: [Int] = []
            for i in 0..<150 {
                let body = #"{"deviceId":"D\#(i / 10)","pushToken":"\#(Self.hexToken(i))"}"#
                let (status, _) = try await exe.request("POST", port, "/v1/devices", bearer: tokens[i % 10], body: body)
                if status == 201 || status == 200 { acknowledged.append(i) }
            }
            return acknowledged
        }
        try await Task.sleep(for: .milliseconds(200))
        let (status, stdout, stderr) = try await exe.run(["rotate-token-key"], in: directory)
        let acknowledged = try await writes.value
        #expect(status == 0, "\(stderr)")
        #expect(stdout.hasPrefix("added sealing key 2; every server holds it; re-sealed "), "\(stdout)")
        #expect(stdout.hasSuffix("; retired key 1\n"), "\(stdout)")
        #expect(acknowledged.count == 150)
        for i in acknowledged {
            let (lookup, body) = try await exe.request("GET", port, "/internal/v1/users/user\(i % 10)/devices", bearer: key)
            #expect(lookup == 200 && body.contains(Self.hexToken(i)), "write \(i) lost")
        }
        #expect(server.stop() == 0)
        let keys = try String(contentsOfFile: directory + "/registry-data/secrets/token-keys", encoding: .utf8)
        #expect(keys.contains("\nseal 2 ") && !keys.contains("\nseal 1 "), "\(keys)")
        let (checked, checkOut, _) = try await exe.run(["check"], in: directory)
        #expect(checked == 0, "\(checkOut)")
    }

    /// A registry started with another key file stops at once with a named
    /// error (exit 2), instead of serving a registry whose tokens all look
    /// absent; the generated file it would have used is not left behind.
    @Test func aWrongTokenKeyFileStopsStartUpWithAClearError() async throws {
        let directory = try exe.makeDirectory()
        try await fillRegistry(directory)
        let keys = directory + "/registry-data/secrets/token-keys"
        try FileManager.default.moveItem(atPath: keys, toPath: directory + "/kept-keys")
        let (status, _, stderr) = try await exe.run(["serve", "--listen", "127.0.0.1:0"], in: directory)
        #expect(status == 2)
        #expect(stderr.contains("--token-key-file: the token key file does not match this registry"), "\(stderr)")
        #expect(!FileManager.default.fileExists(atPath: keys), "the key file generated for the attempt is removed")
        let (withKeys, _, keysErr) = try await exe.run(["check", "--token-key-file", "kept-keys"], in: directory)
        #expect(withKeys == 0, "\(keysErr)")
    }

    // MARK: Progress and readiness

    @Test func progressIsDrawnOnATerminalAndNeverOtherwise() async throws {
        let directory = try exe.makeDirectory()
        try await fillRegistry(directory)
        let (_, original, _) = try await exe.run(["export"], in: directory)
        // 20,000 more devices, made from one exported line, so the import lasts
        // several times past the first draw (200 ms) even on a fast machine.
        let template = try #require(original.split(separator: "\n").first { $0.contains(#""deviceId":"B0""#) })
        let token = Self.hexToken(300)
        var lines = ""
        for i in 0..<20_000 {
            lines += template.replacingOccurrences(of: #""deviceId":"B0""#, with: #""deviceId":"X\#(i)""#)
                .replacingOccurrences(of: token, with: Self.hexToken(10_000 + i)) + "\n"
        }
        try lines.write(toFile: directory + "/many.jsonl", atomically: true, encoding: .utf8)

        // On a pipe (exe.run): the summary line only.
        let (piped, _, pipedErr) = try await exe.run(["import", "--data-dir", "a", "--from", "many.jsonl"], in: directory)
        #expect(piped == 0)
        #expect(pipedErr.isEmpty)
        // On a terminal: a progress line with the rate and time left, redrawn
        // with \r, erased before the summary.
        let terminal = try runWithTerminalStderr(["import", "--data-dir", directory + "/b", "--from", directory + "/many.jsonl"])
        #expect(terminal.contains("\r\u{1B}[Kimport: "), "\(terminal.debugDescription)")
        #expect(terminal.contains(" / 20,000 records, "), "\(terminal.debugDescription)")
        #expect(terminal.contains("/s, "), "\(terminal.debugDescription)")
        #expect(terminal.contains(" left"), "\(terminal.debugDescription)")
        #expect(terminal.hasSuffix("\r\u{1B}[K"), "erased at the end: \(terminal.debugDescription)")
    }

    @Test func readinessIsSentToTheNotifySocket() async throws {
        let directory = try exe.makeDirectory()
        let path = directory + "/notify.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        let server = try await ExecutableTests.Server(arguments: [], directory: directory, environment: ["NOTIFY_SOCKET": path])
        var buffer = [UInt8](repeating: 0, count: 512)
        let n = recv(fd, &buffer, buffer.count, 0)
        let message = n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
        #expect(message.hasPrefix("READY=1\nMAINPID=\(server.process.processIdentifier)\n"), "\(message)")
        #expect(message.contains("STATUS=listening on 127.0.0.1:\(server.port)"))
        #expect(server.stop() == 0)
        let stopping = recv(fd, &buffer, buffer.count, 0)
        #expect(stopping > 0 && String(decoding: buffer[0..<stopping], as: UTF8.self) == "STOPPING=1")
    }

    /// deploy/systemd/registryd.service parses cleanly (systemd-analyze prints a
    /// line for every directive it ignores, and fails on a missing binary).
    @Test func theSystemdUnitVerifies() async throws {
        let directory = try exe.makeDirectory()
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let unit = try String(contentsOf: root.appendingPathComponent("deploy/systemd/registryd.service"), encoding: .utf8)
        #expect(unit.contains("Type=notify\n"))
        #expect(unit.contains("ExecStart=/usr/local/bin/registryd serve --data-dir /var/lib/registryd\n"))
        // The drop-in its comment gives for secret files (LoadCredential=, %d) parses too.
        let dropIn = unit.split(separator: "\n").filter { $0.hasPrefix("#   LoadCredential=") || $0.hasPrefix("#   Environment=") }
            .map { $0.dropFirst(4).replacingOccurrences(of: "/etc/registryd/apns-key.p8", with: "/etc/hostname") }
        #expect(dropIn.count == 2, "\(dropIn)")
        try unit.replacingOccurrences(of: "/usr/local/bin/registryd", with: ExecutableTests.binary)
            .replacingOccurrences(of: "[Service]\n", with: "[Service]\n" + dropIn.joined(separator: "\n") + "\n")
            .write(toFile: directory + "/registryd.service", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/systemd-analyze")
        process.arguments = ["verify", directory + "/registryd.service"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.isEmpty, "\(text)")
    }

    // MARK: Helpers

    /// Three devices of one user with push-to-start and activity tokens, and a signed-out device's tombstone.
    private func fillRegistry(_ directory: String) async throws {
        let server = try await ExecutableTests.Server(arguments: [], directory: directory)
        let (_, minted, _) = try await exe.run(["mint-token", "--user", "alice"], in: directory)
        let jwt = minted.trimmingCharacters(in: .newlines)
        for i in 0..<4 {
            let body = #"{"deviceId":"D\#(i)","pushToken":"\#(Self.hexToken(i))","osVersion":"18.2","appVersion":"2.1.0","sequence":1}"#
            #expect(try await exe.request("POST", server.port, "/v1/devices", bearer: jwt, body: body).0 == 201)
            let start = #"{"deviceId":"D\#(i)","token":"\#(Self.hexToken(100 + i))"}"#
            #expect(try await exe.request("POST", server.port, "/v1/devices/push-to-start-token", bearer: jwt, body: start).0 == 200)
            let activity = #"{"deviceId":"D\#(i)","token":"\#(Self.hexToken(200 + i))"}"#
            #expect(try await exe.request("POST", server.port, "/v1/activities/match-42/activity-token", bearer: jwt,
                                          body: activity).0 == 200)
        }
        #expect(try await exe.request("DELETE", server.port, "/v1/devices/D3?sequence=2", bearer: jwt).0 == 204)
        // A second user, so export spans users.
        let (_, bob, _) = try await exe.run(["mint-token", "--user", "bob"], in: directory)
        for i in 0..<5 {
            let body = #"{"deviceId":"B\#(i)","pushToken":"\#(Self.hexToken(300 + i))","osVersion":"18.2","appVersion":"2.1.0"}"#
            #expect(try await exe.request("POST", server.port, "/v1/devices", bearer: bob.trimmingCharacters(in: .newlines),
                                          body: body).0 == 201)
        }
        #expect(server.stop() == 0)
    }

    /// A 64-hex-digit token unique to `i`.
    static func hexToken(_ i: Int) -> String {
        String(repeating: String(format: "%08x", i), count: 8)
    }

    static func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
    }

    static func counts(_ statsJSON: String) throws -> [String: Int] {
        let object = try JSONSerialization.jsonObject(with: Data(statsJSON.utf8)) as? [String: Any]
        return (object?["counts"] as? [String: Int]) ?? [:]
    }

    /// Runs `registryd` with stderr on a pseudo-terminal (as an operator's
    /// shell has it) and returns what was written there.
    private func runWithTerminalStderr(_ arguments: [String]) throws -> String {
        var master: Int32 = -1, slave: Int32 = -1
        #expect(openpty(&master, &slave, nil, nil, nil) == 0)
        defer { close(master) }
        let process = Registryd.process(arguments, in: FileManager.default.currentDirectoryPath)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(fileDescriptor: slave, closeOnDealloc: false)
        try process.run()
        // Read while the child runs and drain before closing our end of the
        // slave: once no slave is open Linux may answer EIO and drop what the
        // terminal still held.
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var pending = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        while true {
            let running = process.isRunning
            if poll(&pending, 1, running ? 50 : 0) > 0 {
                let n = read(master, &chunk, chunk.count)
                if n > 0 { output += chunk[0..<n]; continue }
            }
            if !running { break }
        }
        process.waitUntilExit()
        close(slave)
        return String(decoding: output, as: UTF8.self)
    }
}
