/// Every flag `registryd` knows, described once: help prints these
/// entries, and a subcommand accepts exactly the flags its `CommandHelp`
/// lists, so what `--help` shows and what the parser takes cannot differ.
struct Flag: Sendable {
    /// Without the leading `--`.
    let name: String
    /// The value's placeholder (`DIR`, `N`); `nil` for a switch such as `--json`.
    let value: String?
    /// What it sets, in a few words.
    let summary: String
    /// The default in force when neither the flag nor its variable is set.
    let defaultValue: String?
    /// Whether `REGISTRY_<FLAG>` is read (`false` for per-run flags such as `--to`).
    var readsEnvironment = true

    var isSwitch: Bool { value == nil }
}

enum Flags {
    static let all: [Flag] = [
        // The data directory, the backend and the store's rules (serve and every operator command).
        Flag(name: "data-dir", value: "DIR",
             summary: "the data directory (generated secrets in DIR/secrets; with --store lmdb, the LMDB environment in DIR/lmdb)",
             defaultValue: "./registry-data"),
        Flag(name: "store", value: "KIND",
             summary: "lmdb (in DIR/lmdb, one server) or postgres (the database --postgres-url names, shared by any number of servers)",
             defaultValue: "lmdb"),
        Flag(name: "postgres-url", value: "URL",
             summary: "with --store postgres: a libpq connection string or postgresql:// URI (multi-host with target_session_attrs=read-write); logged without its password",
             defaultValue: "none; required with --store postgres"),
        Flag(name: "postgres-pool-size", value: "N", summary: "with --store postgres: connections (each on its own thread) this process opens (1-200)",
             defaultValue: "16"),
        Flag(name: "device-ttl", value: "D", summary: "a device not seen for this long is swept (durations: 30s, 15m, 12h, 90d)",
             defaultValue: "90d"),
        Flag(name: "activity-ttl", value: "D", summary: "an activity token not refreshed for this long is swept", defaultValue: "90d"),
        Flag(name: "max-devices-per-user", value: "N", summary: "devices one user keeps (1-10000); also 2N sign-out tombstones",
             defaultValue: "20"),
        Flag(name: "max-activities-per-device", value: "N", summary: "activity tokens one device keeps (1-1000); one more evicts the least recently seen",
             defaultValue: "32"),
        Flag(name: "apps", value: "ID[,ID...]",
             summary: "the appIds (bundle ids) registrations may name; default is always declared; give every node the same list",
             defaultValue: "default only"),
        Flag(name: "log-level", value: "L", summary: "debug, info, warning or error (debug adds one line per request)", defaultValue: "info"),
        // serve: the listener and its connection limits.
        Flag(name: "listen", value: "HOST:PORT", summary: "address to serve on ([::1]:8080 for IPv6; port 0 picks a free port, logged)",
             defaultValue: "127.0.0.1:8080"),
        Flag(name: "sweep-interval", value: "D", summary: "time between two sweeps", defaultValue: "1h"),
        Flag(name: "postgres-startup-timeout", value: "D",
             summary: "with --store postgres: how long serve retries an unreachable database at start before exiting 1",
             defaultValue: "30s"),
        Flag(name: "max-connections", value: "N", summary: "open connections at once (lowered to what ulimit -n allows, logged)",
             defaultValue: "10000"),
        Flag(name: "max-connections-per-address", value: "N", summary: "connections from one client address; 0 = off",
             defaultValue: "0"),
        Flag(name: "header-timeout", value: "D", summary: "time allowed for a request line and headers", defaultValue: "10s"),
        Flag(name: "body-timeout", value: "D", summary: "time allowed for a request body, from the end of its headers", defaultValue: "30s"),
        // Credentials.
        Flag(name: "jwt-hs256-secret-file", value: "F", summary: "HS256 secret for device JWTs (at least 32 bytes)",
             defaultValue: "generated in DIR/secrets/jwt-hs256.secret when no JWT key is configured"),
        Flag(name: "jwt-jwks-file", value: "F", summary: "RS256/ES256 public keys for device JWTs (a JWKS, RFC 7517)", defaultValue: "none"),
        Flag(name: "jwt-issuer", value: "S", summary: "required `iss` of device JWTs", defaultValue: "not checked"),
        Flag(name: "jwt-audience", value: "S", summary: "required `aud` of device JWTs", defaultValue: "not checked"),
        Flag(name: "internal-api-key-file", value: "F", summary: "bearer key of the internal API (at least 32 bytes)",
             defaultValue: "generated in DIR/secrets/internal-api.key"),
        Flag(name: "operator-key-file", value: "F",
             summary: "read-only bearer key (at least 32 bytes): the console's reads, stats, notifications, history, no token",
             defaultValue: "generated in DIR/secrets/operator.key"),
        Flag(name: "token-key-file", value: "F",
             summary: "the keys tokens are sealed and indexed with at rest (guard and back up like a password)",
             defaultValue: "generated in DIR/secrets/token-keys"),
        // Delivery through APNs (serve): without a key the notification routes answer 409.
        Flag(name: "apns-key-file", value: "F", summary: "the APNs auth key (.p8, a P-256 private key in PEM); turns delivery on",
             defaultValue: "none: delivery off"),
        Flag(name: "apns-key-id", value: "KID", summary: "with --apns-key-file: the key's id (the provider token's kid)", defaultValue: "none"),
        Flag(name: "apns-team-id", value: "TEAM", summary: "with --apns-key-file: the Apple team id (the provider token's iss)",
             defaultValue: "none"),
        Flag(name: "apns-topic", value: "APPID=BUNDLEID",
             summary: "the APNs topic of an app (repeatable; the variable takes a comma-separated list); apps without one cannot be sent to",
             defaultValue: "none"),
        Flag(name: "apns-production-url", value: "URL", summary: "APNs' production host (https only)", defaultValue: "https://api.push.apple.com"),
        Flag(name: "apns-sandbox-url", value: "URL", summary: "APNs' sandbox host (https only)", defaultValue: "https://api.sandbox.push.apple.com"),
        Flag(name: "apns-ca-file", value: "F", summary: "an extra trusted CA (PEM) for a proxy or a test server; the system's stay trusted",
             defaultValue: "none"),
        Flag(name: "apns-request-timeout", value: "D", summary: "a request to APNs unanswered by then has an unknown outcome (never resent)",
             defaultValue: "10s"),
        Flag(name: "apns-ping-interval", value: "D", summary: "a connection to APNs idle this long is replaced before it is used again (1s-1h)",
             defaultValue: "5m"),
        Flag(name: "apns-sandbox-key-file", value: "F", summary: "another .p8 key for the sandbox host only (with --apns-sandbox-key-id)",
             defaultValue: "none: --apns-key-file"),
        Flag(name: "apns-sandbox-key-id", value: "KID", summary: "with --apns-sandbox-key-file: that key's id", defaultValue: "none"),
        // Delivery through FCM (serve): an app's Android tokens are sent with its Firebase project's service account.
        Flag(name: "fcm-service-account", value: "APPID=FILE",
             summary: "the Google service-account JSON of the Firebase project an app's Android tokens belong to (repeatable; "
                 + "REGISTRY_FCM_SERVICE_ACCOUNTS takes a comma-separated list; mode 0600); turns FCM delivery on",
             defaultValue: "none: FCM delivery off"),
        Flag(name: "fcm-url", value: "URL", summary: "FCM's HTTP v1 API host (https only)", defaultValue: "https://fcm.googleapis.com"),
        Flag(name: "fcm-token-url", value: "URL", summary: "Google's OAuth 2.0 token endpoint (https only)",
             defaultValue: "each file's token_uri"),
        Flag(name: "fcm-ca-file", value: "F", summary: "an extra trusted CA (PEM) for a proxy or a test server; the system's stay trusted",
             defaultValue: "none"),
        Flag(name: "fcm-request-timeout", value: "D", summary: "a request to FCM unanswered by then has an unknown outcome (never resent)",
             defaultValue: "10s"),
        // Delivery, whichever provider sends.
        Flag(name: "max-queued-deliveries", value: "N",
             summary: "deliveries not yet sent (queued or sending, every node's) above which a notification is refused with 503 queue_full",
             defaultValue: "5000000"),
        // Every provider's connections (serve).
        Flag(name: "delivery-proxy", value: "URL",
             summary: "an HTTP CONNECT proxy (http:// or https://, optionally user:password@) every provider connection goes "
                 + "through; without it they go straight out, whatever https_proxy or ALL_PROXY say",
             defaultValue: "none: direct"),
        // Per-command flags: they describe one run, so no environment variable sets them.
        Flag(name: "user", value: "U", summary: "the JWT's subject (a user id)", defaultValue: nil, readsEnvironment: false),
        Flag(name: "ttl", value: "D", summary: "the JWT's lifetime", defaultValue: "1h", readsEnvironment: false),
        Flag(name: "json", value: nil, summary: "print the JSON document GET /internal/v1/stats answers", defaultValue: nil,
             readsEnvironment: false),
        Flag(name: "dry-run", value: nil, summary: "count what would be removed; remove nothing", defaultValue: nil,
             readsEnvironment: false),
        Flag(name: "to", value: "DIR", summary: "the backup's directory: absent or empty", defaultValue: nil, readsEnvironment: false),
        Flag(name: "with-secrets", value: nil,
             summary: "also copy DIR/secrets (token keys, JWT secret, internal API and operator keys) into the backup",
             defaultValue: nil, readsEnvironment: false),
        Flag(name: "from", value: "FILE", summary: "export lines to read", defaultValue: "standard input", readsEnvironment: false),
        Flag(name: "server-wait", value: "D",
             summary: "how long to wait for every running server to load the new key before giving up (nothing is retired then)",
             defaultValue: "30s", readsEnvironment: false),
        Flag(name: "repair", value: nil, summary: "rebuild every index from the records, then check again", defaultValue: nil,
             readsEnvironment: false),
    ]

    private static let byName: [String: Flag] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// The entry for `name`; every name a command lists is in `all` (a test checks it).
    static func named(_ name: String) -> Flag? { byName[name] }

    /// The data directory, the backend and the store's rules: every command that opens a registry.
    static let store = ["data-dir", "store", "postgres-url", "postgres-pool-size", "device-ttl", "activity-ttl",
                        "max-devices-per-user", "max-activities-per-device", "apps", "token-key-file", "log-level"]
    static let auth = ["jwt-hs256-secret-file", "jwt-jwks-file", "jwt-issuer", "jwt-audience", "internal-api-key-file",
                       "operator-key-file"]
    static let fcm = ["fcm-service-account", "fcm-url", "fcm-token-url", "fcm-ca-file", "fcm-request-timeout"]
    static let apns = ["apns-key-file", "apns-key-id", "apns-team-id", "apns-topic", "apns-production-url",
                       "apns-sandbox-url", "apns-ca-file", "apns-request-timeout", "apns-ping-interval",
                       "apns-sandbox-key-file", "apns-sandbox-key-id"]
    static let serve = store + ["postgres-startup-timeout", "listen", "sweep-interval", "max-connections",
                                "max-connections-per-address", "header-timeout", "body-timeout"] + auth + apns + fcm
        + ["max-queued-deliveries", "delivery-proxy"]
}
