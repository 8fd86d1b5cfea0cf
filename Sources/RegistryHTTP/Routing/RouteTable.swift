/// Every endpoint of docs/api.md, one row each: label (method and path
/// template), surface, whether it takes a JSON body, what the read-only
/// operator key may do there (nothing unless the row says), and its handler.
/// `OpenAPI/openapi.json` describes every row (and nothing else), with the
/// row's surface as its security: `OpenAPIDocumentTests` holds the two equal.
///
/// Rows are tried in order, so a literal segment must come before a
/// parameter in the same position (`POST /v1/devices/push-to-start-token`
/// before `GET /v1/devices/{deviceId}`): then a device named
/// `push-to-start-token` is still readable with GET.
enum RouteTable {
    static let endpoints: [Endpoint] = [
        // The device API (docs/api.md "Device API").
        Endpoint("POST /v1/devices", .device, json: true, .write { try await $0.registerDevice($1) }),
        Endpoint("GET /v1/devices", .device, .read { try $0.listDevices($1, $2) }),
        Endpoint("POST /v1/devices/push-to-start-token", .device, json: true,
                 .write { try await $0.registerPushToStart($1) }),
        Endpoint("GET /v1/devices/{deviceId}", .device, .read { try $0.getDevice($1, $2) }),
        Endpoint("DELETE /v1/devices/{deviceId}", .device, .write { try await $0.signOut($1) }),
        Endpoint("DELETE /v1/devices/{deviceId}/push-to-start-token", .device,
                 .write { try await $0.removePushToStart($1) }),
        Endpoint("POST /v1/activities/{activityId}/activity-token", .device, json: true,
                 .write { try await $0.registerActivityToken($1) }),
        Endpoint("DELETE /v1/activities/{activityId}/activity-token", .device,
                 .write { try await $0.removeActivityToken($1) }),
        // The internal API (docs/api.md "Internal API", "Token history" and "Environment correction").
        Endpoint("GET /internal/v1/users/{userId}/devices", .internal, operator: .operatorView, .read { try $0.userDevices($1, $2) }),
        Endpoint("GET /internal/v1/users/{userId}/history", .internal, operator: .reads, .read { try $0.tokenHistory($1, $2) }),
        Endpoint("POST /internal/v1/users/lookup", .internal, json: true, .read { try $0.lookupUsers($1, $2) }),
        Endpoint("GET /internal/v1/activities/{activityId}/tokens", .internal, .read { try $0.activityTokens($1, $2) }),
        // Operator reads (docs/api.md "Operator reads"): counts, never a token.
        Endpoint("GET /internal/v1/activities/{activityId}/token-counts", .internal, operator: .reads,
                 .read { try $0.activityTokenCounts($1, $2) }),
        Endpoint("GET /internal/v1/removals", .internal, operator: .reads, .read { try $0.removals($1, $2) }),
        Endpoint("POST /internal/v1/feedback", .internal, json: true, .write { try await $0.feedback($1) }),
        Endpoint("POST /internal/v1/tokens/environment", .internal, json: true,
                 .write { try await $0.correctEnvironment($1) }),
        // Delivery through APNs (docs/api.md "Delivery").
        Endpoint("POST /internal/v1/notifications", .internal, json: true, .write { try await $0.acceptNotification($1) }),
        Endpoint("GET /internal/v1/notifications", .internal, operator: .reads, .write { try await $0.listNotifications($1) }),
        Endpoint("GET /internal/v1/deliveries/queue", .internal, operator: .reads, .write { try await $0.deliveryQueue($1) }),
        Endpoint("GET /internal/v1/notifications/{notificationId}", .internal, operator: .reads,
                 .write { try await $0.showNotification($1) }),
        Endpoint("DELETE /internal/v1/notifications/{notificationId}", .internal,
                 .write { try await $0.cancelNotification($1) }),
        Endpoint("POST /internal/v1/sweep", .internal, json: true, .write { try await $0.sweep($1) }),
        Endpoint("GET /internal/v1/stats", .internal, operator: .reads, .read { try $0.stats($1, $2) }),
        Endpoint("GET /metrics", .internal, .write { await $0.prometheusMetrics($1) }),
        Endpoint("GET /healthz", .open, .read { try $0.healthz($1, $2) }),
        // This contract as an OpenAPI 3.1 document (OpenAPI/openapi.json).
        Endpoint("GET /openapi.json", .open, .read { app, call, _ in try app.openAPIDocument(call) }),
        // The operator console (Console/): static files, no data; its script reads the internal API with the key.
        Endpoint("GET /console", .open, .read { app, call, _ in try app.consolePage(call) }),
        Endpoint("GET /console/app.js", .open, .read { app, call, _ in try app.consoleScript(call) }),
        Endpoint("GET /console/app.css", .open, .read { app, call, _ in try app.consoleStylesheet(call) }),
    ]
}
