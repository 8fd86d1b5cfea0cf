import HTTP2

/// What every delivery provider's flags share (`--apns-*`, `--fcm-*`): the
/// hosts are `https://` URLs (TLS is always verified), an extra CA is a
/// file name, a request timeout lies between 1 s and 10 minutes; and the
/// one proxy they all go through (`--delivery-proxy`).
enum ProviderFlags {
    /// The `https://` URL `flag` gives, or `nil` when it is not given.
    static func httpsURL(_ arguments: Arguments, _ flag: String) throws(Arguments.Failure) -> String? {
        guard let (url, source) = arguments.value(flag) else { return nil }
        guard url.hasPrefix("https://"), url.count > 8 else {
            throw Arguments.Failure(description: "\(source) must be an https:// URL (TLS is always verified), got '\(url)'")
        }
        return url
    }

    /// The CA file `flag` names, or `nil` when it is not given.
    static func caFile(_ arguments: Arguments, _ flag: String) throws(Arguments.Failure) -> String? {
        guard let (caFile, source) = arguments.value(flag) else { return nil }
        guard !caFile.isEmpty else { throw Arguments.Failure(description: "\(source) must not be empty") }
        return caFile
    }

    /// The request timeout `flag` gives (1s to 600s), or `nil` when it is not given.
    static func requestTimeout(_ arguments: Arguments, _ flag: String) throws(Arguments.Failure) -> Duration? {
        guard let timeout = try Settings.duration(arguments, flag) else { return nil }
        guard timeout >= .seconds(1), timeout <= .seconds(600) else {
            throw Arguments.Failure(description: "--\(flag) must be from 1s to 600s")
        }
        return timeout
    }

    /// `--delivery-proxy`, or `nil` when it is not given. A refusal names
    /// the flag and what is wrong, never the value (it may hold a password).
    static func proxy(_ arguments: Arguments) throws(Arguments.Failure) -> HTTP2Proxy? {
        guard let (url, source) = arguments.value("delivery-proxy") else { return nil }
        do {
            return try HTTP2Proxy.parse(url)
        } catch {
            throw Arguments.Failure(description: "\(source) \(error)")
        }
    }
}
