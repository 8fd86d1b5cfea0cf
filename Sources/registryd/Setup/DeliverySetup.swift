import RegistryCore
import RegistryDelivery
import RegistryHTTP

/// Builds delivery from the providers' flags: each provider (its
/// credentials read and checked first, so a bad file stops `serve` before
/// anything is written), the sender over all of them, and what the
/// notification routes need.
struct DeliverySetup {
    /// The nice value of the threads that send (the sender's and the HTTP/2
    /// clients'); the API's threads keep 0.
    static let senderNiceness: Int32 = 10

    let sender: DeliverySender
    let routes: DeliveryRoutes

    /// Every configured provider, one line each, connecting through the proxy when there is one.
    static func providers(_ settings: DeliverySettings) throws -> DeliveryProviders {
        DeliveryProviders([
            try settings.apns.map { try APNsSetup.provider($0, proxy: settings.proxy) },
            try settings.fcm.map { try FCMSetup.provider($0, proxy: settings.proxy) },
        ].compactMap { $0 })
    }

    init(_ providers: DeliveryProviders, store: any RegistryMaintenance, singleProcess: Bool, maxQueued: Int,
         metrics: RegistryMetrics, logger: Logger) {
        var configuration = DeliverySender.Configuration()
        configuration.abandonClaimsAtStart = singleProcess
        configuration.threadNiceness = Self.senderNiceness
        let sender = DeliverySender(configuration: configuration, store: store, registry: store, providers: providers,
                                    observer: DeliveryTelemetry(metrics: metrics, logger: logger))
        self.sender = sender
        let capabilities = providers.capabilities
        routes = DeliveryRoutes(intake: NotificationIntake(registry: store, deliveries: store, capabilities: capabilities,
                                                           maxQueued: maxQueued),
                                store: store, capabilities: capabilities, accepted: { sender.notify() })
    }
}
