import Testing
@testable import RegistryHTTP

@Suite struct RouterTests {
    private func route(_ method: String, _ path: String) -> Route? {
        try? Router.match(method: method, path: path).get()
    }

    @Test func matchesEveryRoute() {
        #expect(route("POST", "/v1/devices") == .registerDevice)
        #expect(route("GET", "/v1/devices") == .listDevices)
        #expect(route("GET", "/v1/devices/abc") == .getDevice(deviceId: "abc"))
        #expect(route("DELETE", "/v1/devices/abc") == .signOut(deviceId: "abc"))
        #expect(route("POST", "/v1/devices/push-to-start-token") == .registerPushToStart)
        #expect(route("DELETE", "/v1/devices/abc/push-to-start-token") == .removePushToStart(deviceId: "abc"))
        #expect(route("POST", "/v1/activities/m1/activity-token") == .registerActivityToken(activityId: "m1"))
        #expect(route("DELETE", "/v1/activities/m1/activity-token") == .removeActivityToken(activityId: "m1"))
        #expect(route("GET", "/internal/v1/users/u%2F1/devices") == .userDevices(userId: "u%2F1"))
        #expect(route("POST", "/internal/v1/users/lookup") == .lookupUsers)
        #expect(route("GET", "/internal/v1/activities/m1/tokens") == .activityTokens(activityId: "m1"))
        #expect(route("POST", "/internal/v1/feedback") == .feedback)
        #expect(route("POST", "/internal/v1/sweep") == .sweep)
        #expect(route("GET", "/internal/v1/stats") == .stats)
        #expect(route("GET", "/metrics") == .metrics)
        #expect(route("GET", "/healthz") == .healthz)
        #expect(route("HEAD", "/healthz") == .healthz)
    }

    @Test func deviceNamedLikeARouteIsStillReadable() {
        #expect(route("GET", "/v1/devices/push-to-start-token") == .getDevice(deviceId: "push-to-start-token"))
    }

    @Test(arguments: ["/", "/v1", "/v1/devices/", "/v1//devices", "/v2/devices", "/v1/devices/a/b",
                      "/internal/v1/users/u", "/internal/v1/nope", "healthz", "/healthz/"])
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

    @Test func percentDecodingIsPerSegment() {
        #expect(PercentDecoding.decode("u%2F1") == "u/1")
        #expect(PercentDecoding.decode("a+b") == "a+b")
        #expect(PercentDecoding.decode("%e2%82%ac") == "€")
        #expect(PercentDecoding.decode("%zz") == nil)
        #expect(PercentDecoding.decode("%4") == nil)
        #expect(PercentDecoding.decode("%ff") == nil)
    }
}
