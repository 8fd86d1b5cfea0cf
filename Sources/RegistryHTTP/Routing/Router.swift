/// Maps a method and raw path to a `Route`: 404 when no route has the path,
/// 405 (with `Allow`) when one has it but not with this method.
///
/// Segments are split on `/` before any percent-decoding, so an id holding
/// `%2F` stays one segment. Empty segments (`//`, a trailing `/`) match no
/// route. `HEAD` is accepted wherever `GET` is.
public enum Router {
    public static func match(method: String, path: String) -> Result<Route, APIError> {
        guard path.hasPrefix("/") else { return .failure(.notFound) }
        let segments = path.utf8.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self) }
        guard !segments.contains(where: \.isEmpty) else { return .failure(.notFound) }
        guard let candidates = routes(for: segments) else { return .failure(.notFound) }
        let effective = method == "HEAD" ? "GET" : method
        if let route = candidates[effective] { return .success(route) }
        var allowed = candidates.keys.sorted()
        if allowed.contains("GET") { allowed.append("HEAD") }
        return .failure(.methodNotAllowed(allowed))
    }

    /// The routes that share this path, by method; `nil` when none does.
    private static func routes(for s: [String]) -> [String: Route]? {
        switch s.count {
        case 1:
            if s[0] == "healthz" { return ["GET": .healthz] }
            if s[0] == "metrics" { return ["GET": .metrics] }
        case 2 where s[0] == "v1" && s[1] == "devices":
            return ["POST": .registerDevice, "GET": .listDevices]
        case 3 where s[0] == "v1" && s[1] == "devices":
            var byMethod: [String: Route] = ["GET": .getDevice(deviceId: s[2]), "DELETE": .signOut(deviceId: s[2])]
            if s[2] == "push-to-start-token" { byMethod["POST"] = .registerPushToStart }
            return byMethod
        case 3 where s[0] == "internal" && s[1] == "v1":
            switch s[2] {
            case "feedback": return ["POST": .feedback]
            case "sweep": return ["POST": .sweep]
            case "stats": return ["GET": .stats]
            default: return nil
            }
        case 4 where s[0] == "v1" && s[1] == "devices" && s[3] == "push-to-start-token":
            return ["DELETE": .removePushToStart(deviceId: s[2])]
        case 4 where s[0] == "v1" && s[1] == "activities" && s[3] == "activity-token":
            return ["POST": .registerActivityToken(activityId: s[2]), "DELETE": .removeActivityToken(activityId: s[2])]
        case 4 where s[0] == "internal" && s[1] == "v1" && s[2] == "users" && s[3] == "lookup":
            return ["POST": .lookupUsers]
        case 5 where s[0] == "internal" && s[1] == "v1" && s[2] == "users" && s[4] == "devices":
            return ["GET": .userDevices(userId: s[3])]
        case 5 where s[0] == "internal" && s[1] == "v1" && s[2] == "activities" && s[4] == "tokens":
            return ["GET": .activityTokens(activityId: s[3])]
        default:
            break
        }
        return nil
    }
}
