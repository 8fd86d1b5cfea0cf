import Foundation
import RegistrydTestSupport
import Testing

/// `--store`, `--postgres-url` and `--postgres-pool-size` as the command
/// line and environment give them: what is refused before anything is
/// written, and a URL's password kept out of every message. None of these
/// needs a database (an unreachable one is a closed port).
extension ExecutableTests {
    static let password = "hunter2-not-for-logs"

    @Test(arguments: [
        (["serve", "--store", "postgres"], "--postgres-url is required with --store postgres"),
        (["export", "--store", "postgres"], "--postgres-url is required with --store postgres"),
        (["serve", "--store", "mysql"], "--store must be lmdb or postgres, got 'mysql'"),
        (["serve", "--postgres-url", "host=db"], "--postgres-url is set but --store is not"),
        (["serve", "--store", "postgres", "--postgres-url", "localhost"], "--postgres-url must be a libpq connection string"),
        (["serve", "--store", "postgres", "--postgres-url", "host=db", "--postgres-pool-size", "0"],
         "--postgres-pool-size must be a whole number from 1 to 200"),
        (["serve", "--store", "postgres", "--postgres-url", "host=db", "--postgres-pool-size", "201"],
         "--postgres-pool-size must be a whole number from 1 to 200"),
        (["serve", "--store", "postgres", "--postgres-url", "host=db", "--postgres-startup-timeout", "soon"],
         "--postgres-startup-timeout must be a positive whole number"),
        (["check", "--repair", "--store", "postgres", "--postgres-url", "host=db"], "PostgreSQL keeps its indexes itself"),
        (["backup", "--to", "b", "--store", "postgres", "--postgres-url", "host=db"], "pg_basebackup"),
    ])
    func aBadStoreChoiceIsRefusedNamingTheFlagBeforeWritingAnything(_ arguments: [String], _ message: String) async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (status, stdout, stderr) = try await run(arguments, in: directory)
        #expect(status == 2)
        #expect(stdout.isEmpty)
        #expect(stderr.hasPrefix("registryd \(arguments[0]): "), "\(stderr)")
        #expect(stderr.contains(message), "\(stderr)")
        #expect(stderr.split(separator: "\n").count == 1, "\(stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test func theStoreIsChosenByItsVariablesAndAFlagBeatsThem() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (status, _, stderr) = try await run(["serve"], in: directory, environment: ["REGISTRY_STORE": "postgres"])
        #expect(status == 2)
        #expect(stderr.contains("--postgres-url is required with --store (from REGISTRY_STORE) postgres"), "\(stderr)")
        let (lmdb, _, lmdbErr) = try await run(["stats", "--store", "lmdb"], in: directory,
                                         environment: ["REGISTRY_STORE": "postgres", "REGISTRY_POSTGRES_URL": "host=db"])
        #expect(lmdb == 2, "no LMDB registry here")
        #expect(lmdbErr.contains("--data-dir: no registry"), "--store lmdb beats REGISTRY_STORE: \(lmdbErr)")
    }

    /// A password in the URL never reaches a message, whether the URL is a
    /// URI (user:password@, password=) or key=value pairs, and even when
    /// libpq's own message would quote it (a bad %-escape). Any parameter
    /// whose name holds "password" in any case (sslpassword, the client
    /// key's passphrase) counts as one.
    @Test(arguments: [
        "postgresql://registry:\(password)@127.0.0.1:1/registry",
        "postgresql://registry@127.0.0.1:1/registry?password=\(password)&connect_timeout=2",
        "host=127.0.0.1 port=1 password='\(password)' dbname=registry",
        "postgresql://registry@127.0.0.1:1/registry?sslpassword=\(password)&connect_timeout=2",
        "postgresql://registry@127.0.0.1:1/registry?connect_timeout=2&SSLPassword=\(password)",
        "postgresql://registry@127.0.0.1:1/registry?ssl%70assword=\(password)",
        "host=127.0.0.1 port=1 sslpassword=\(password) dbname=registry",
        "host=127.0.0.1 port=1 SslPassWord = '\(password) x' dbname=registry",
        "postgresql://registry:\(password)%zz@127.0.0.1:1/registry",
        // libpq reads user information up to the first '@' before a '/', even past a '?'.
        "postgresql://127.0.0.1:1?sslmode=disable&x:\(password)@localhost:1",
    ])
    func aPasswordInTheURLIsNeverPrinted(_ url: String) async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for command in [["import", "--from", "/dev/null"], ["serve", "--listen", "127.0.0.1:0", "--postgres-startup-timeout", "1s"]] {
            let (status, stdout, stderr) = try await run(command + ["--store", "postgres", "--postgres-url", url], in: directory)
            #expect(status != 0)
            #expect(stderr.contains("--postgres-url"), "\(stderr)")
            #expect(stderr.contains("***"), "the URL is shown redacted: \(stderr)")
            #expect(!(stdout + stderr).contains("hunter2"), "\(stderr)")
        }
    }

    /// An unreachable database at start is retried (logged) for
    /// --postgres-startup-timeout, then serve exits 1 with one clear line.
    @Test func serveRetriesAnUnreachableDatabaseThenExitsOne() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let started = Date()
        let (status, _, stderr) = try await run(["serve", "--listen", "127.0.0.1:0", "--store", "postgres",
                                           "--postgres-url", "postgresql://registry@127.0.0.1:1/registry",
                                           "--postgres-startup-timeout", "2s"], in: directory)
        let seconds = Date().timeIntervalSince(started)
        #expect(status == 1)
        #expect(seconds >= 2 && seconds < 10, "\(seconds)")
        #expect(stderr.contains(#""event":"store_unreachable","store":"postgres","postgresURL":"postgresql://registry@127.0.0.1:1/registry""#),
                "\(stderr)")
        let last = stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.hasPrefix("registryd serve: --postgres-url: cannot reach the database at 'postgresql://registry@127.0.0.1:1/registry': "),
                "\(last)")
        #expect(last.contains("--postgres-startup-timeout"), "\(last)")
    }

    @Test func helpListsTheStoreFlags() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (_, serve, _) = try await run(["help", "serve"], in: directory)
        for (flag, variable) in [("--store KIND", "REGISTRY_STORE"), ("--postgres-url URL", "REGISTRY_POSTGRES_URL"),
                                 ("--postgres-pool-size N", "REGISTRY_POSTGRES_POOL_SIZE"),
                                 ("--postgres-startup-timeout D", "REGISTRY_POSTGRES_STARTUP_TIMEOUT")] {
            #expect(serve.contains("\n  \(flag)\n"), "\(flag)")
            #expect(serve.contains("env: \(variable)\n"), "\(variable)")
        }
        #expect(serve.contains("(default: lmdb)"))
        for command in ["stats", "sweep", "check", "export", "import", "rotate-token-key"] {
            let (_, help, _) = try await run([command, "--help"], in: directory)
            #expect(help.contains("\n  --store KIND\n") && help.contains("\n  --postgres-url URL\n"), "\(command)")
            #expect(!help.contains("--postgres-startup-timeout"), "\(command): only serve retries at start")
        }
    }
}
