import RegistryCore

/// What the notification routes need when delivery is configured (an APNs
/// key was given): without it they answer `409 delivery_not_configured`.
public struct DeliveryRoutes: Sendable {
    public var intake: NotificationIntake
    public var store: any DeliveryStore
    /// The APNs topic (bundle id) of each app that may be sent to.
    public var topics: [String: String]
    /// Called after a notification was stored, so the sender claims it at once.
    public var accepted: @Sendable () -> Void

    public init(intake: NotificationIntake, store: any DeliveryStore, topics: [String: String],
                accepted: @escaping @Sendable () -> Void) {
        self.intake = intake
        self.store = store
        self.topics = topics
        self.accepted = accepted
    }
}

extension APIError {
    static let deliveryNotConfigured = APIError(
        status: 409, code: "delivery_not_configured",
        message: "delivery is not configured: start registryd with --apns-key-file (and --apns-key-id, --apns-team-id, --apns-topic)")

    static let idempotencyKeyReused = APIError(
        status: 409, code: "idempotency_key_reused",
        message: "idempotencyKey was used within 24 hours for a notification with another body")

    static let notificationNotFound = APIError.recordNotFound("notification")
}
