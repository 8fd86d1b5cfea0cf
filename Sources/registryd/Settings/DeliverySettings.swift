import RegistryCore

/// Delivery's settings, one member per provider: delivery is on when any
/// provider is configured (`--apns-key-file`, `--fcm-service-account`).
struct DeliverySettings: Sendable {
    var apns: APNsSettings?
    var fcm: FCMSettings?
    /// `--max-queued-deliveries` (1 to 1,000,000,000).
    var maxQueued = NotificationIntake.defaultMaxQueued

    /// `nil` when no provider is configured. `apps`: the declared apps (a
    /// provider's credentials for an undeclared one are a bad flag).
    static func read(_ arguments: Arguments, apps: DeclaredApps) throws(Arguments.Failure) -> DeliverySettings? {
        var settings = DeliverySettings(apns: try APNsSettings.read(arguments), fcm: try FCMSettings.read(arguments, apps: apps))
        if let (value, source) = arguments.value("max-queued-deliveries") {
            guard let n = ValueParsing.positiveInt(value, max: 1_000_000_000) else {
                throw Arguments.Failure(description: "\(source) must be a whole number from 1 to 1000000000")
            }
            settings.maxQueued = n
        }
        return settings.providerNames.isEmpty ? nil : settings
    }

    /// The configured providers' names, for the start line (`apns`, `fcm`).
    var providerNames: [String] {
        [apns.map { _ in "apns" }, fcm.map { _ in "fcm" }].compactMap { $0 }
    }
}
