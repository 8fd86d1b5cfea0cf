// swift-tools-version:6.0
import PackageDescription

/// registryd: a push-notification device registry.
///
/// Dependencies point one way:
/// `registryd → RegistryHTTP → (RegistryCore, HTTPServer, JWT)`, and
/// `registryd → (RegistryLMDB, RegistryPostgres) → RegistryCore`, and
/// `registryd → RegistryDelivery → (RegistryCore, APNs)`: the sender, which
/// drives the delivery queue (`RegistryCore`'s `DeliveryStore`, kept by
/// each engine) through the APNs client.
/// `RegistryCore` is the engine-neutral registry: the store protocols and
/// their records, validation, limits, the sweeper, key rotation's rules and
/// the resumable step loop. Each engine is its own target on top of it:
/// `RegistryLMDB` (on `LMDB → CLMDB`) and `RegistryPostgres` (on
/// `Postgres → CLibPQ`); neither sees the other, and only `registryd`
/// (which picks one by `--store`) and the tests see both.
/// Shared leaves, each the one implementation of its concern: `JSON`
/// (strict parser, escaping writer), `Codecs` (strict base64url, hex, percent-decoding,
/// constant-time compare, length-prefixed fields, durations in seconds),
/// `Crypto` (HMAC-SHA-256 and SHA-256 over `COpenSSL`), `Lifecycle`
/// (`Service`, `ServiceGroup`, `PeriodicThread`: one start/stop shape;
/// `ThreadNiceness` and `ThreadExecutor`: background threads that yield to the API).
/// `SecretFiles` reads files that hold a secret, refusing one that group or
/// others may access (one rule for every key file).
/// `TokenSealing` (AES-256-GCM sealing of tokens at rest and their key file)
/// depends only on `COpenSSL`, `Crypto`, `Codecs` and `SecretFiles`.
/// `HTTPServer` (the libmicrohttpd adapter) and `JWT` (token verification
/// over OpenSSL) know nothing of the registry, so each is tested on its own.
/// `Postgres` (libpq connections on dedicated threads, a pool, retried
/// transactions, advisory locks, versioned migrations) depends only on
/// `CLibPQ` and `Codecs`. `APNs` (the HTTP/2 client of Apple's provider
/// API: ES256 provider tokens, libcurl's multi handle on a dedicated thread,
/// at-most-once result kinds) depends on `CCurl`, `COpenSSL`, `Codecs`,
/// `JSON` and `Lifecycle`, and knows nothing of the registry.
/// `CGlibcExtras` exposes the glibc calls the Glibc module leaves out
/// (registryd turns core dumps off with them; `Lifecycle` sets a thread's nice value).
/// `RegistryClient` is the app-side library: Foundation only, no dependency
/// on the server's targets, so an app adds it alone; `RegistryClientActivityKit`
/// watches ActivityKit's token sequences for it (compiled only where ActivityKit exists).
/// `public` is a target's API; what only the engines and tests may use of
/// the core (raw records, step loops, test hooks) is `package` access.
let package = Package(
    name: "registryd",
    // The floor is RegistryClient's (Duration and ContinuousClock need macOS 13 / iOS 16); the
    // server targets import Glibc and build on Linux only, where these do not apply.
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .executable(name: "registryd", targets: ["registryd"]),
        .library(name: "RegistryClient", targets: ["RegistryClient"]),
        .library(name: "RegistryClientActivityKit", targets: ["RegistryClientActivityKit"]),
    ],
    targets: [
        .systemLibrary(name: "CLMDB", pkgConfig: "lmdb",
                       providers: [.apt(["liblmdb-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd",
                       providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        // glibc's own headers (no package): what the Glibc module does not import.
        .systemLibrary(name: "CGlibcExtras"),

        .target(name: "LMDB", dependencies: ["CLMDB"]),
        .target(name: "Crypto", dependencies: ["COpenSSL"]),
        .target(name: "Codecs"),
        .target(name: "SecretFiles"),
        .target(name: "Lifecycle", dependencies: ["CGlibcExtras"]),
        .target(name: "RegistryCore", dependencies: ["Codecs", "Crypto", "Lifecycle", "TokenSealing"]),
        .target(name: "RegistryLMDB", dependencies: ["RegistryCore", "LMDB", "Codecs", "Crypto", "Lifecycle", "TokenSealing"]),
        .target(name: "RegistryPostgres", dependencies: ["RegistryCore", "Postgres", "Codecs", "Lifecycle", "TokenSealing"]),
        .target(name: "JSON"),
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "JSON", "Lifecycle"]),
        .target(name: "JWT", dependencies: ["COpenSSL", "Crypto", "JSON", "Codecs"]),
        .target(name: "TokenSealing", dependencies: ["COpenSSL", "Crypto", "Codecs", "SecretFiles"]),
        .target(name: "Postgres", dependencies: ["CLibPQ", "Codecs"]),
        .target(name: "HTTP2", dependencies: ["CCurl", "Codecs", "Lifecycle"]),
        .target(name: "APNs", dependencies: ["HTTP2", "RegistryCore", "COpenSSL", "Codecs", "JSON", "JWT", "Lifecycle", "SecretFiles"]),
        .target(name: "FCM", dependencies: ["HTTP2", "RegistryCore", "JWT", "JSON", "Codecs", "SecretFiles"]),
        .target(name: "RegistryDelivery", dependencies: ["RegistryCore", "Lifecycle"]),
        .target(name: "RegistryHTTP", dependencies: ["RegistryCore", "HTTPServer", "JWT", "JSON", "Codecs"],
                // The OpenAPI document and the operator console, compiled into the binary as
                // `PackageResources.openapi_json`, `console_html`, `app_js` and `app_css` (served by
                // `GET /openapi.json` and `GET /console`; no resource bundle beside the executable).
                resources: [.embedInCode("OpenAPI/openapi.json"), .embedInCode("Console/console.html"),
                            .embedInCode("Console/app.js"), .embedInCode("Console/app.css")]),
        .executableTarget(name: "registryd", dependencies: ["RegistryHTTP", "RegistryCore", "RegistryLMDB", "RegistryPostgres", "HTTPServer", "JWT", "JSON", "TokenSealing",
                                                            "Lifecycle", "Codecs", "Postgres", "CGlibcExtras", "APNs", "FCM", "RegistryDelivery",
                                                            "SecretFiles", "HTTP2"]),
        .target(name: "RegistryClient"),
        // ActivityKit glue for RegistryClient; empty where ActivityKit does not exist (Linux, macOS).
        .target(name: "RegistryClientActivityKit", dependencies: ["RegistryClient"]),
        .executableTarget(name: "registry-bench", dependencies: ["RegistryCore", "RegistryLMDB", "RegistryPostgres", "LMDB", "COpenSSL", "Codecs", "Crypto", "JWT", "TokenSealing"],
                         path: "Sources/registry-bench"),

        .testTarget(name: "CodecsTests", dependencies: ["Codecs"]),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "LMDBTests", dependencies: ["LMDB"]),
        .testTarget(name: "LifecycleTests", dependencies: ["Lifecycle"]),
        // The store suites: one contract suite that runs against each engine (tools/test runs it
        // twice, REGISTRY_TEST_BACKEND=postgres the second time), and one suite per engine for
        // what only it has. RegistryTestSupport holds their fixture (a store on either engine).
        .target(name: "RegistryTestSupport", dependencies: ["RegistrydTestSupport", "RegistryCore", "RegistryLMDB", "RegistryPostgres", "LMDB",
                                                            "Postgres", "TokenSealing"],
                path: "Tests/RegistryTestSupport"),
        .testTarget(name: "RegistryContractTests", dependencies: ["RegistryTestSupport", "RegistrydTestSupport", "RegistryCore", "RegistryLMDB",
                                                                  "RegistryPostgres", "LMDB", "Postgres", "Codecs", "Crypto",
                                                                  "TokenSealing"]),
        .testTarget(name: "RegistryLMDBTests", dependencies: ["RegistryTestSupport", "RegistrydTestSupport", "RegistryCore", "RegistryLMDB", "LMDB",
                                                              "Codecs", "Crypto", "TokenSealing"]),
        .testTarget(name: "RegistryPostgresTests", dependencies: ["RegistryTestSupport", "RegistrydTestSupport", "RegistryCore", "RegistryPostgres",
                                                                  "RegistryLMDB", "Postgres", "TokenSealing"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "RegistrydTestSupport"]),
        .testTarget(name: "JWTTests", dependencies: ["JWT", "JSON", "Codecs", "Crypto"]),
        .testTarget(name: "TokenSealingTests", dependencies: ["TokenSealing", "Codecs", "Crypto"]),
        // Runs against REGISTRY_TEST_POSTGRES_URL (tools/test starts a server); skipped when it is unset.
        .testTarget(name: "PostgresTests", dependencies: ["Postgres"]),
        // Starts tools/fake-apns (Python, h2) for the HTTP/2 answers; skipped when it cannot run.
        .testTarget(name: "APNsTests", dependencies: ["APNs", "APNsTestSupport", "RegistryCore", "COpenSSL", "Codecs", "JSON", "RegistrydTestSupport"]),
        // FCM's rules, bodies and service accounts, and its client against tools/fake-fcm (skipped when it cannot run).
        .testTarget(name: "FCMTests", dependencies: ["FCM", "HTTP2", "JWT", "RegistryCore", "APNsTestSupport", "JSON",
                                                     "RegistrydTestSupport"]),
        // The transport's CURLcode mapping (the at-most-once kinds every provider relies on).
        .testTarget(name: "HTTP2Tests", dependencies: ["HTTP2", "CCurl"]),
        // tools/fake-apns as a test's child process, with a client configuration that trusts its CA.
        .target(name: "APNsTestSupport", dependencies: ["APNs", "JSON", "RegistrydTestSupport"], path: "Tests/APNsTestSupport"),
        // The sender against tools/fake-apns, on the test store (LMDB, or PostgreSQL with REGISTRY_TEST_BACKEND).
        .testTarget(name: "DeliveryTests", dependencies: ["RegistryDelivery", "APNs", "FCM", "RegistryCore", "RegistryLMDB", "RegistryTestSupport",
                                                       "RegistrydTestSupport", "APNsTestSupport", "JSON"]),
        .testTarget(name: "RegistryHTTPTests", dependencies: ["RegistryHTTP", "RegistryCore", "RegistryLMDB", "RegistryTestSupport",
                                                       "HTTPServer", "JWT", "JSON", "TokenSealing", "LMDB", "Codecs"]),
        // The one way tests start the built registryd, find its port and talk to it, and run
        // blocking work off the cooperative pool (Foundation only).
        .target(name: "RegistrydTestSupport", path: "Tests/RegistrydTestSupport"),
        // The executable as a user runs it: flags, subcommands, signals, both stores (PostgreSQL
        // through REGISTRY_TEST_POSTGRES_URL, skipped when it is unset), delivery to tools/fake-apns.
        .testTarget(name: "registrydTests", dependencies: ["RegistrydTestSupport", "APNsTestSupport", "registryd"]),
        .testTarget(name: "RegistryClientTests", dependencies: ["RegistryClient", "RegistrydTestSupport"]),
        // Replays tools/fuzz's seeds and kept findings through the same harnesses (Harness/).
        .testTarget(name: "FuzzRegressionTests", dependencies: ["Codecs", "JSON", "JWT", "RegistryCore", "RegistryLMDB", "HTTPServer",
                                                         "RegistryHTTP", "TokenSealing"]),
    ],
    swiftLanguageModes: [.v6]
)
