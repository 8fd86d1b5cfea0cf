import HTTP2
import RegistryCore

/// Delivery's settings, one member per provider: delivery is on when any
/// provider is configured (`--apns-key-file`, `--fcm-service-account`);
/// and the proxy all of them go through.
struct DeliverySettings: Sendable {
    var apns: APNsSettings?
    var fcm: FCMSettings?
    /// `--max-queued-deliveries` (1 to 1,000,000,000).
    var maxQueued = NotificationIntake.defaultMaxQueued
    /// `--delivery-proxy`; `nil`: provider connections go straight out.
    var proxy: HTTP2Proxy?

    /// `nil` when no provider is configured (a proxy without one is
    /// refused, like any provider flag). `apps`: the declared apps (a
    /// provider's credentials for an undeclared one are a bad flag).
    static func read(_ arguments: Arguments, apps: DeclaredApps) throws(Arguments.Failure) -> DeliverySettings? {
        var settings = DeliverySettings(apns: try APNsSettings.read(arguments), fcm: try FCMSettings.read(arguments, apps: apps),
                                        proxy: try ProviderFlags.proxy(arguments))
        if let (value, source) = arguments.value("max-queued-deliveries") {
            guard let n = ValueParsing.positiveInt(value, max: 1_000_000_000) else {
                throw Arguments.Failure(description: "\(source) must be a whole number from 1 to 1000000000")
            }
            settings.maxQueued = n
        }
        guard settings.providerNames.isEmpty else { return settings }
        if let (_, source) = arguments.value("delivery-proxy") {
            throw Arguments.Failure(description: "\(source) needs a provider (--apns-key-file or --fcm-service-account)")
        }
        return nil
    }

    /// The configured providers' names, for the start line (`apns`, `fcm`).
    var providerNames: [String] {
        [apns.map { _ in "apns" }, fcm.map { _ in "fcm" }].compactMap { $0 }
    }
}
