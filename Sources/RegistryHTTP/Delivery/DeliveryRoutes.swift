import HTTPServer
import RegistryCore

/// What the notification routes need when delivery is configured (an APNs
/// key or an FCM service account was given): without it they answer `409
/// delivery_not_configured`.
public struct DeliveryRoutes: Sendable {
    public var intake: NotificationIntake
    public var store: any DeliveryStore
    /// Which platforms each app can be sent on (an app with none is a 400).
    public var capabilities: DeliveryCapabilities
    /// Called after a notification was stored, so the sender claims it at once.
    public var accepted: @Sendable () -> Void

    public init(intake: NotificationIntake, store: any DeliveryStore, capabilities: DeliveryCapabilities,
                accepted: @escaping @Sendable () -> Void) {
        self.intake = intake
        self.store = store
        self.capabilities = capabilities
        self.accepted = accepted
    }
}

extension APIError {
    static let deliveryNotConfigured = APIError(
        status: 409, code: "delivery_not_configured",
        message: "delivery is not configured: start registryd with --apns-key-file (and --apns-key-id, --apns-team-id, --apns-topic) or --fcm-service-account APPID=FILE")

    static let idempotencyKeyReused = APIError(
        status: 409, code: "idempotency_key_reused",
        message: "idempotencyKey was used within 24 hours for a notification with another body")

    static let notificationNotFound = APIError.recordNotFound("notification")

    /// Nothing of the request was stored (its idempotency key included): the same request may be sent again later.
    static func queueFull(pending: Int, limit: Int) -> APIError {
        APIError(status: 503, code: "queue_full",
                 message: "the delivery queue holds \(pending) deliveries not yet sent, at or above --max-queued-deliveries "
                     + "(\(limit)); nothing was stored, send it again later",
                 headers: ["Retry-After": HTTPResponse.retryAfterSeconds])
    }
}
