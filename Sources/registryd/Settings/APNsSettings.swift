import RegistryCore

/// `--apns-*`: delivery through APNs, on when `--apns-key-file` is given.
/// Every value is checked here, before anything starts; the key file
/// itself is read by `APNsSetup` (a file that is not a P-256 private
/// key stops serve with exit 2 there).
struct APNsSettings: Sendable {
    var keyFile: String
    var keyId: String
    var teamId: String
    /// appId → the APNs topic (bundle id).
    var topics: [String: String]
    var productionURL = "https://api.push.apple.com"
    var sandboxURL = "https://api.sandbox.push.apple.com"
    var caFile: String?
    var requestTimeout: Duration = .seconds(10)
    var pingInterval: Duration = .seconds(300)
    /// A key of its own for the sandbox host, and its id.
    var sandboxKey: (file: String, id: String)?

    /// `nil` when no key is configured (the other `--apns-*` flags are then refused, so a
    /// half-configured sender is never silently off).
    static func read(_ arguments: Arguments) throws(Arguments.Failure) -> APNsSettings? {
        guard let (keyFile, keySource) = arguments.value("apns-key-file") else {
            for flag in Flags.apns where arguments.value(flag) != nil {
                throw Arguments.Failure(description: "--\(flag) needs --apns-key-file (delivery is off without an APNs key)")
            }
            return nil
        }
        guard !keyFile.isEmpty else { throw Arguments.Failure(description: "\(keySource) must not be empty") }
        guard let (keyId, _) = arguments.value("apns-key-id"), Self.isAppleId(keyId) else {
            throw Arguments.Failure(description: "--apns-key-id is required with --apns-key-file: the key's 10-character id (letters and digits)")
        }
        guard let (teamId, _) = arguments.value("apns-team-id"), Self.isAppleId(teamId) else {
            throw Arguments.Failure(description: "--apns-team-id is required with --apns-key-file: the 10-character team id (letters and digits)")
        }
        var settings = APNsSettings(keyFile: keyFile, keyId: keyId, teamId: teamId, topics: [:])
        if let (entries, source) = arguments.values("apns-topic") {
            for entry in entries {
                let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                guard parts.count == 2, Identifier.checkAppId(parts[0]) == nil, Self.isBundleId(parts[1]) else {
                    throw Arguments.Failure(description: "\(source) must be APPID=BUNDLEID (e.g. default=com.example.app), got '\(entry)'")
                }
                guard settings.topics[parts[0]] == nil else {
                    throw Arguments.Failure(description: "\(source) names app '\(parts[0])' twice")
                }
                settings.topics[parts[0]] = parts[1]
            }
        }
        if settings.topics.isEmpty {
            throw Arguments.Failure(description: "--apns-topic is required with --apns-key-file: APPID=BUNDLEID for each app to send to")
        }
        settings.productionURL = try ProviderFlags.httpsURL(arguments, "apns-production-url") ?? settings.productionURL
        settings.sandboxURL = try ProviderFlags.httpsURL(arguments, "apns-sandbox-url") ?? settings.sandboxURL
        settings.caFile = try ProviderFlags.caFile(arguments, "apns-ca-file")
        settings.requestTimeout = try ProviderFlags.requestTimeout(arguments, "apns-request-timeout") ?? settings.requestTimeout
        if let interval = try Settings.duration(arguments, "apns-ping-interval") {
            guard interval >= .seconds(1), interval <= .seconds(3600) else {
                throw Arguments.Failure(description: "--apns-ping-interval must be from 1s to 1h")
            }
            settings.pingInterval = interval
        }
        settings.sandboxKey = try Self.sandboxKey(arguments)
        return settings
    }

    /// `--apns-sandbox-key-file` and `--apns-sandbox-key-id`, both or neither.
    private static func sandboxKey(_ arguments: Arguments) throws(Arguments.Failure) -> (file: String, id: String)? {
        switch (arguments.value("apns-sandbox-key-file"), arguments.value("apns-sandbox-key-id")) {
        case (nil, nil):
            return nil
        case (let (file, source)?, let (id, _)?):
            guard !file.isEmpty else { throw Arguments.Failure(description: "\(source) must not be empty") }
            guard isAppleId(id) else {
                throw Arguments.Failure(description: "--apns-sandbox-key-id must be the sandbox key's 10-character id (letters and digits)")
            }
            return (file, id)
        case (nil, _?):
            throw Arguments.Failure(description: "--apns-sandbox-key-id needs --apns-sandbox-key-file")
        case (_?, nil):
            throw Arguments.Failure(description: "--apns-sandbox-key-id is required with --apns-sandbox-key-file: that key's 10-character id")
        }
    }

    /// Apple's key and team ids: 10 letters or digits.
    static func isAppleId(_ text: String) -> Bool {
        text.utf8.count == 10 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) }
    }

    /// A bundle id: letters, digits, '.', '-' (what APNs takes as a topic), 1 to 155 bytes.
    static func isBundleId(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 155 && text.utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2E || $0 == 0x2D
        }
    }
}
