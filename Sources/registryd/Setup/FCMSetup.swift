import FCM
import HTTP2
import RegistryCore

/// The FCM provider of `--fcm-*`: each app's service account (a file that
/// is not one, holds no RSA key or is readable by group or others is a bad
/// flag: exit 2, naming the file) and the HTTP/2 client. Made before
/// anything is written, started with the sender.
enum FCMSetup {
    static func provider(_ settings: FCMSettings, proxy: HTTP2Proxy?) throws -> any DeliveryProvider {
        var accounts: [String: ServiceAccount] = [:]
        for (appId, file) in settings.serviceAccounts {
            do {
                accounts[appId] = try ServiceAccount(contentsOf: file)
            } catch {
                throw Arguments.Failure(description: "--fcm-service-account \(appId)=\(file): \(error)")
            }
        }
        var configuration = FCMConfiguration(fcmURL: settings.fcmURL, tokenURL: settings.tokenURL, caFile: settings.caFile,
                                             requestTimeout: settings.requestTimeout)
        configuration.http.threadNiceness = DeliverySetup.senderNiceness
        configuration.http.proxy = proxy
        do {
            return try FCMProvider(configuration: configuration, accounts: accounts)
        } catch {
            throw Arguments.Failure(description: "--fcm-*: \(error)")
        }
    }
}
