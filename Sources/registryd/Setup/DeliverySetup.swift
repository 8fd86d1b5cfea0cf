import APNs
import RegistryCore
import RegistryDelivery
import RegistryHTTP

/// Builds delivery from `--apns-*`: the provider key (a file that is not a
/// P-256 private key is a bad flag: exit 2), its provider tokens, the
/// HTTP/2 client, the sender, and what the notification routes need.
struct DeliverySetup {
    /// The HTTP/2 client thread's nice value (the API's threads keep 0).
    static let senderNiceness: Int32 = 10

    let sender: DeliverySender
    let routes: DeliveryRoutes

    /// The provider key of `--apns-key-file`, read before anything is
    /// written (a bad flag leaves no data directory behind).
    static func providerKey(_ settings: DeliverySettings) throws -> ProviderKey {
        do {
            return try ProviderKey(contentsOf: settings.keyFile)
        } catch {
            throw Arguments.Failure(description: "--apns-key-file: \(error)")
        }
    }

    init(_ settings: DeliverySettings, key: ProviderKey, store: any RegistryMaintenance, singleProcess: Bool,
         metrics: RegistryMetrics, logger: Logger) throws {
        let tokens: ProviderTokens
        do {
            tokens = try ProviderTokens(key: key, teamId: settings.teamId, keyId: settings.keyId)
        } catch {
            throw Arguments.Failure(description: "--apns-key-file: \(error)")
        }
        let client: APNsClient
        do {
            var configuration = APNsClientConfiguration(
                productionURL: settings.productionURL, sandboxURL: settings.sandboxURL, caFile: settings.caFile,
                requestTimeout: settings.requestTimeout)
            // The API's lookups come first: under CPU contention a fan-out slows rather than the sender's reads.
            configuration.threadNiceness = Self.senderNiceness
            client = try APNsClient(configuration: configuration, tokens: tokens)
        } catch {
            throw Arguments.Failure(description: "--apns-*: \(error)")
        }
        var configuration = DeliverySender.Configuration(topics: settings.topics)
        configuration.abandonClaimsAtStart = singleProcess
        let sender = DeliverySender(configuration: configuration, store: store, registry: store, client: client,
                                    tokens: tokens, observer: DeliveryTelemetry(metrics: metrics, logger: logger))
        self.sender = sender
        routes = DeliveryRoutes(intake: NotificationIntake(registry: store, deliveries: store), store: store,
                                topics: settings.topics, accepted: { sender.notify() })
    }
}
