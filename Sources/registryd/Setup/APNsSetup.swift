import APNs
import HTTP2
import RegistryCore

/// The APNs provider of `--apns-*`: its keys (a file that is not a P-256
/// private key is a bad flag: exit 2), provider tokens and HTTP/2 client.
/// Made before anything is written, started with the sender.
enum APNsSetup {
    static func provider(_ settings: APNsSettings, proxy: HTTP2Proxy?) throws -> any DeliveryProvider {
        let tokens = try Self.tokens(file: settings.keyFile, keyId: settings.keyId, teamId: settings.teamId, flag: "--apns-key-file")
        let sandboxTokens = try settings.sandboxKey.map { key in
            try Self.tokens(file: key.file, keyId: key.id, teamId: settings.teamId, flag: "--apns-sandbox-key-file")
        }
        do {
            var configuration = APNsClientConfiguration(
                productionURL: settings.productionURL, sandboxURL: settings.sandboxURL, caFile: settings.caFile,
                requestTimeout: settings.requestTimeout, pingInterval: settings.pingInterval)
            configuration.http.threadNiceness = DeliverySetup.senderNiceness
            configuration.http.proxy = proxy
            return APNsProvider(client: try APNsClient(configuration: configuration, tokens: tokens, sandboxTokens: sandboxTokens),
                                topics: settings.topics)
        } catch {
            throw Arguments.Failure(description: "--apns-*: \(error)")
        }
    }

    private static func tokens(file: String, keyId: String, teamId: String, flag: String) throws -> ProviderTokens {
        do {
            return try ProviderTokens(key: ProviderKey(contentsOf: file), teamId: teamId, keyId: keyId)
        } catch {
            throw Arguments.Failure(description: "\(flag): \(error)")
        }
    }
}
