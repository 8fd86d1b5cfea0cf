import JWT
import RegistryCore
@testable import RegistryHTTP

extension Harness {
    /// What the delivering harness can send: only `default` has an APNs
    /// topic, so a declared app without one can be named.
    static let deliveryCapabilities = DeliveryCapabilities(["default": [.apns]])

    /// This harness's store behind an application with delivery configured
    /// (as `serve --apns-key-file …` wires it, minus the sender: every
    /// accepted delivery stays `queued`, so the routes are seen alone).
    func delivering(maxQueued: Int = NotificationIntake.defaultMaxQueued) -> Harness {
        let routes = DeliveryRoutes(intake: NotificationIntake(registry: store, deliveries: store, clock: clock,
                                                               capabilities: Self.deliveryCapabilities, maxQueued: maxQueued),
                                    store: store, capabilities: Self.deliveryCapabilities, accepted: {})
        let verifier = JWTVerifier(configuration: JWTConfiguration(hs256Secret: Self.secret))
        let application = RegistryApplication(
            store: store, authenticator: Authenticator(verifier: verifier, internalAPIKey: Array(Self.apiKey.utf8),
                                                                   operatorKey: Array(Self.operatorKey.utf8), clock: clock),
            metrics: RegistryMetrics(), logger: Logger(minimumLevel: .debug, sink: { logs.append($0) }), delivery: routes)
        return Harness(application: application, store: store, clock: clock, logs: logs, directory: directory)
    }

    /// `POST /internal/v1/notifications` with `body`, as the push sender.
    func notify(_ body: String) async -> Reply {
        await send("POST", "/internal/v1/notifications", body: body, as: .apiKey)
    }

    /// Registers an activity token for `m1` on device `d<n>` of user `u<n>`.
    func registerActivityToken(_ n: UInt8, activity: String = "m1") async {
        await send("POST", "/v1/activities/\(activity)/activity-token",
                   body: #"{"deviceId": "d\#(n)", "token": "\#(token(n))"}"#, as: .user("u\(n)"))
    }
}

/// How many deliveries the harness's store holds `queued` (nil when it cannot say).
func queued(_ h: Harness) async -> Int? {
    try? await h.store.queueStats().queued
}
