import RegistryCore

/// `--fcm-*`: delivery through FCM, on when `--fcm-service-account` names
/// at least one app's file. Every value is checked here, before anything
/// starts; the files themselves are read by `FCMSetup` (one that is not a
/// service account, holds no RSA key or is readable by group or others
/// stops serve with exit 2 there).
struct FCMSettings: Sendable {
    /// appId → its service-account file.
    var serviceAccounts: [String: String]
    var fcmURL = "https://fcm.googleapis.com"
    var tokenURL: String?
    var caFile: String?
    var requestTimeout: Duration = .seconds(10)

    /// `nil` when no service account is given (the other `--fcm-*` flags are then refused).
    static func read(_ arguments: Arguments, apps: DeclaredApps) throws(Arguments.Failure) -> FCMSettings? {
        guard let (entries, source) = arguments.values("fcm-service-account") else {
            for flag in Flags.fcm where arguments.value(flag) != nil {
                throw Arguments.Failure(description: "--\(flag) needs --fcm-service-account (FCM delivery is off without one)")
            }
            return nil
        }
        var settings = FCMSettings(serviceAccounts: [:])
        for entry in entries {
            let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, Identifier.checkAppId(parts[0]) == nil, !parts[1].isEmpty else {
                throw Arguments.Failure(description: "\(source) must be APPID=FILE (e.g. default=/etc/registryd/firebase.json), got '\(entry)'")
            }
            guard apps.contains(parts[0]) else {
                throw Arguments.Failure(description: "\(source): \(parts[1]) names app '\(parts[0])', which is not declared (--apps \(apps))")
            }
            guard settings.serviceAccounts[parts[0]] == nil else {
                throw Arguments.Failure(description: "\(source) names app '\(parts[0])' twice")
            }
            settings.serviceAccounts[parts[0]] = parts[1]
        }
        settings.fcmURL = try ProviderFlags.httpsURL(arguments, "fcm-url") ?? settings.fcmURL
        settings.tokenURL = try ProviderFlags.httpsURL(arguments, "fcm-token-url")
        settings.caFile = try ProviderFlags.caFile(arguments, "fcm-ca-file")
        settings.requestTimeout = try ProviderFlags.requestTimeout(arguments, "fcm-request-timeout") ?? settings.requestTimeout
        return settings
    }
}
