import Codecs
import Testing
@testable import RegistryHTTP

@Suite struct RouterTests {
    /// The matched row's label and raw path parameter.
    private func route(_ method: String, _ path: String) -> Route? {
        (try? Router.match(method: method, path: path).get()).map { Route($0.endpoint.label, $0.rawParameter) }
    }

    private struct Route: Equatable {
        var label: String
        var parameter: String?
        init(_ label: String, _ parameter: String? = nil) {
            self.label = label
            self.parameter = parameter
        }
    }

    @Test func matchesEveryRoute() {
        #expect(route("POST", "/v1/devices") == Route("POST /v1/devices"))
        #expect(route("GET", "/v1/devices") == Route("GET /v1/devices"))
        #expect(route("GET", "/v1/devices/abc") == Route("GET /v1/devices/{deviceId}", "abc"))
        #expect(route("DELETE", "/v1/devices/abc") == Route("DELETE /v1/devices/{deviceId}", "abc"))
        #expect(route("POST", "/v1/devices/push-to-start-token") == Route("POST /v1/devices/push-to-start-token"))
        #expect(route("DELETE", "/v1/devices/abc/push-to-start-token") == Route("DELETE /v1/devices/{deviceId}/push-to-start-token", "abc"))
        #expect(route("POST", "/v1/activities/m1/activity-token") == Route("POST /v1/activities/{activityId}/activity-token", "m1"))
        #expect(route("DELETE", "/v1/activities/m1/activity-token") == Route("DELETE /v1/activities/{activityId}/activity-token", "m1"))
        #expect(route("GET", "/internal/v1/users/u%2F1/devices") == Route("GET /internal/v1/users/{userId}/devices", "u%2F1"))
        #expect(route("GET", "/internal/v1/users/u%2F1/history") == Route("GET /internal/v1/users/{userId}/history", "u%2F1"))
        #expect(route("POST", "/internal/v1/users/lookup") == Route("POST /internal/v1/users/lookup"))
        #expect(route("GET", "/internal/v1/activities/m1/tokens") == Route("GET /internal/v1/activities/{activityId}/tokens", "m1"))
        #expect(route("POST", "/internal/v1/feedback") == Route("POST /internal/v1/feedback"))
        #expect(route("POST", "/internal/v1/tokens/environment") == Route("POST /internal/v1/tokens/environment"))
        #expect(route("POST", "/internal/v1/sweep") == Route("POST /internal/v1/sweep"))
        #expect(route("GET", "/internal/v1/stats") == Route("GET /internal/v1/stats"))
        #expect(route("GET", "/metrics") == Route("GET /metrics"))
        #expect(route("GET", "/healthz") == Route("GET /healthz"))
        #expect(route("HEAD", "/healthz") == Route("GET /healthz"))
        #expect(route("GET", "/openapi.json") == Route("GET /openapi.json"))
    }

    @Test func deviceNamedLikeARouteIsStillReadable() {
        #expect(route("GET", "/v1/devices/push-to-start-token") == Route("GET /v1/devices/{deviceId}", "push-to-start-token"))
    }

    @Test(arguments: ["/", "/v1", "/v1/devices/", "/v1//devices", "/v2/devices", "/v1/devices/a/b",
                      "/internal/v1/users/u", "/internal/v1/nope", "healthz", "/healthz/",
                      "/internal/v1/users/u/devices/more"])
    func unknownPathsAreNotFound(_ path: String) {
        guard case .failure(let error) = Router.match(method: "GET", path: path) else {
            Issue.record("\(path) matched"); return
        }
        #expect(error.status == 404)
        #expect(error.code == "not_found")
    }

    @Test func wrongMethodListsAllowed() {
        guard case .failure(let error) = Router.match(method: "PUT", path: "/v1/devices") else {
            Issue.record("matched"); return
        }
        #expect(error.status == 405)
        #expect(error.code == "method_not_allowed")
        #expect(error.headers["Allow"] == "GET, POST, HEAD")
        guard case .failure(let other) = Router.match(method: "POST", path: "/v1/devices/abc") else {
            Issue.record("matched"); return
        }
        #expect(other.headers["Allow"] == "DELETE, GET, HEAD")
    }

    @Test func everyRowIsReachableAndLabelledByItsTemplate() {
        var labels = Set<String>()
        for endpoint in RouteTable.endpoints {
            #expect(labels.insert(endpoint.label).inserted, "two rows for \(endpoint.label)")
            let path = endpoint.label.split(separator: " ")[1].replacingOccurrences(of: "{", with: "x")
                .replacingOccurrences(of: "}", with: "")
            let matched = try? Router.match(method: endpoint.method, path: path).get()
            #expect(matched?.endpoint.label == endpoint.label, "\(endpoint.label) is shadowed by an earlier row")
        }
    }

    @Test func bodyLimitsFollowTheSurface() {
        for endpoint in RouteTable.endpoints {
            let open = endpoint.label.hasSuffix("/healthz") || endpoint.label.hasSuffix("/openapi.json")
                || endpoint.label.hasPrefix("GET /console")
            let expected = endpoint.label.contains(" /v1/") || open ? 16 * 1024 : 1024 * 1024
            #expect(endpoint.maxBodyBytes == expected, "\(endpoint.label)")
        }
    }

    @Test func percentDecodingIsPerSegment() {
        #expect(PercentDecoding.decode("u%2F1") == "u/1")
        #expect(PercentDecoding.decode("a+b") == "a+b")
        #expect(PercentDecoding.decode("%e2%82%ac") == "€")
        #expect(PercentDecoding.decode("%zz") == nil)
        #expect(PercentDecoding.decode("%4") == nil)
        #expect(PercentDecoding.decode("%ff") == nil)
    }
}
