import APNs
import HTTP2
import RegistryCore

/// The APNs provider of `--apns-*`: its key (a file that is not a P-256
/// private key is a bad flag: exit 2), provider tokens and HTTP/2 client.
/// Made before anything is written, started with the sender.
enum APNsSetup {
    static func provider(_ settings: APNsSettings, proxy: HTTP2Proxy?) throws -> any DeliveryProvider {
        let tokens: ProviderTokens
        do {
            tokens = try ProviderTokens(key: ProviderKey(contentsOf: settings.keyFile), teamId: settings.teamId, keyId: settings.keyId)
        } catch {
            throw Arguments.Failure(description: "--apns-key-file: \(error)")
        }
        do {
            var configuration = APNsClientConfiguration(
                productionURL: settings.productionURL, sandboxURL: settings.sandboxURL, caFile: settings.caFile,
                requestTimeout: settings.requestTimeout)
            configuration.http.threadNiceness = DeliverySetup.senderNiceness
            configuration.http.proxy = proxy
            return APNsProvider(client: try APNsClient(configuration: configuration, tokens: tokens), tokens: tokens,
                                topics: settings.topics)
        } catch {
            throw Arguments.Failure(description: "--apns-*: \(error)")
        }
    }
}
