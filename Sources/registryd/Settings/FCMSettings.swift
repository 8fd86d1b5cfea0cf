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
        for flag in ["fcm-url", "fcm-token-url"] {
            guard let (url, source) = arguments.value(flag) else { continue }
            guard url.hasPrefix("https://"), url.count > 8 else {
                throw Arguments.Failure(description: "\(source) must be an https:// URL (TLS is always verified), got '\(url)'")
            }
            if flag == "fcm-url" { settings.fcmURL = url } else { settings.tokenURL = url }
        }
        if let (caFile, source) = arguments.value("fcm-ca-file") {
            guard !caFile.isEmpty else { throw Arguments.Failure(description: "\(source) must not be empty") }
            settings.caFile = caFile
        }
        if let timeout = try Settings.duration(arguments, "fcm-request-timeout") {
            guard timeout >= .seconds(1), timeout <= .seconds(600) else {
                throw Arguments.Failure(description: "--fcm-request-timeout must be from 1s to 600s")
            }
            settings.requestTimeout = timeout
        }
        return settings
    }
}
