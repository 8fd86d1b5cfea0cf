/// Delivery's settings, one member per provider: delivery is on when any
/// provider is configured (`--apns-key-file`, …).
struct DeliverySettings: Sendable {
    var apns: APNsSettings?

    /// `nil` when no provider is configured.
    static func read(_ arguments: Arguments) throws(Arguments.Failure) -> DeliverySettings? {
        let settings = DeliverySettings(apns: try APNsSettings.read(arguments))
        return settings.providerNames.isEmpty ? nil : settings
    }

    /// The configured providers' names, for the start line (`apns`, `fcm`).
    var providerNames: [String] {
        [apns.map { _ in "apns" }].compactMap { $0 }
    }
}
