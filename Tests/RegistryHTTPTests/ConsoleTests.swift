import Foundation
import Testing
@testable import RegistryHTTP

/// `GET /console` and its two files (docs/operations.md "The console"):
/// served without a key under a policy that confines the page, and built
/// so that the page can only read token-free routes of its own origin.
@Suite struct ConsoleTests {
    static let files: [(path: String, type: String, body: [UInt8])] = [
        ("/console", "text/html; charset=utf-8", PackageResources.console_html),
        ("/console/app.js", "text/javascript; charset=utf-8", PackageResources.app_js),
        ("/console/app.css", "text/css; charset=utf-8", PackageResources.app_css),
    ]

    static let policy = ["default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src data:",
                         "connect-src 'self'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
                         "require-trusted-types-for 'script'", "trusted-types 'none'"]

    @Test func eachFileIsServedWithoutAKeyUnderAStrictPolicy() async throws {
        try await Harness.with { h in
            for file in Self.files {
                for caller in [Caller.none, .apiKey, .bearer("nonsense")] {
                    let reply = await h.send("GET", file.path, as: caller)
                    #expect(reply.status == 200, "\(file.path): \(reply.text)")
                    #expect(reply.header("Content-Type") == file.type, "\(file.path)")
                    #expect(reply.body == file.body, "\(file.path)")
                    let directives = reply.header("Content-Security-Policy")?.split(separator: ";")
                        .map { $0.trimmingCharacters(in: .whitespaces) } ?? []
                    #expect(directives == Self.policy, "\(file.path): \(directives)")
                    #expect(reply.header("X-Content-Type-Options") == "nosniff")
                    #expect(reply.header("Referrer-Policy") == "no-referrer")
                    #expect(reply.header("Cache-Control") == "no-store")
                    #expect(reply.header("X-Frame-Options") == "DENY")
                }
                #expect(await h.send("HEAD", file.path, as: .none).status == 200, "\(file.path)")
            }
        }
    }

    @Test(arguments: ["/console/", "/console/index.html", "/console/app.jsx", "/console/app.js/x", "/console/x/app.js",
                      "/consoles", "/Console"])
    func anyOtherConsolePathIsNotFound(_ path: String) async throws {
        try await Harness.with { h in
            let reply = await h.send("GET", path, as: .none)
            #expect(reply.status == 404, "\(path): \(reply.text)")
            #expect(reply.errorCode == "not_found")
            #expect(reply.header("Content-Type") == "application/json")
        }
    }

    @Test func theConsoleTakesOnlyGet() async throws {
        try await Harness.with { h in
            for method in ["POST", "PUT", "DELETE"] {
                let reply = await h.send(method, "/console", body: method == "DELETE" ? nil : "{}", as: .apiKey)
                #expect(reply.status == 405, "\(method): \(reply.text)")
                #expect(reply.header("Allow") == "GET, HEAD")
            }
        }
    }

    /// What the policy cannot say: the page holds no inline script or
    /// style (it would not run anyway) and names no other origin.
    @Test func thePageHasNothingInlineAndNoOtherOrigin() throws {
        let page = String(decoding: PackageResources.console_html, as: UTF8.self)
        #expect(!page.contains("<style") && !page.contains(" style="))
        #expect(page.components(separatedBy: "<script").count == 2 && page.contains(#"<script src="console/app.js" defer></script>"#))
        #expect(page.firstMatch(of: try Regex(#"\son[a-z]+="#)) == nil, "an inline event handler")
        #expect(!page.contains("http:") && !page.contains("https:") && !page.contains("//"), "an absolute URL")
    }

    /// The script writes values as text only (Trusted Types would refuse
    /// the rest at run time), and reads nothing but token-free routes: a
    /// sender read would put tokens in the browser's memory.
    @Test func theScriptWritesTextAndReadsOnlyTokenFreeRoutes() throws {
        let script = String(decoding: PackageResources.app_js, as: UTF8.self)
        for sink in [".innerHTML", ".outerHTML", ".insertAdjacentHTML", "document.write", "eval(", "new Function",
                     "setAttribute('style'", ".style."] {
            #expect(!script.contains(sink), "the script uses \(sink)")
        }
        #expect(!script.contains("https:") && !script.replacingOccurrences(of: "http://www.w3.org/2000/svg", with: "").contains("http:"))
        let reads = try Regex(#"[`']internal/v1/[^`'?]*"#)
        let paths = Set(script.matches(of: reads).map { String(script[$0.range].dropFirst()) })
        let tokenFree: Set<String> = ["internal/v1/stats", "internal/v1/removals", "internal/v1/deliveries/queue",
                                      "internal/v1/notifications", "internal/v1/users/${id}/devices", "internal/v1/users/${id}/history",
                                      "internal/v1/activities/${encodeURIComponent(activityId)}/token-counts",
                                      "internal/v1/notifications/${encodeURIComponent(id)}"]
        #expect(paths == tokenFree, "\(paths.sorted())")
        #expect(script.contains("internal/v1/users/${id}/devices?view=operator"))
        #expect(!script.contains("/tokens"), "the fan-out carries tokens")
    }

    /// The page asks for the read-only operator key, and every read of the
    /// script is one that key may make (with the query it sends), so the
    /// console never needs the internal key.
    @Test func theConsoleAsksForTheOperatorKeyAndReadsOnlyWhatItAdmits() throws {
        let page = String(decoding: PackageResources.console_html, as: UTF8.self)
        #expect(page.contains("Operator key") && page.contains("DIR/secrets/operator.key") && page.contains("--operator-key-file"))
        let script = String(decoding: PackageResources.app_js, as: UTF8.self)
        let reads = script.matches(of: try Regex(#"[`']internal/v1/[^`']*"#)).map { String(script[$0.range].dropFirst()) }
        #expect(reads.count >= 8)
        for read in reads {
            let parts = read.replacing(try Regex(#"\$\{[^}]*\}"#), with: "x").split(separator: "?", maxSplits: 1).map(String.init)
            guard case .success(let match) = Router.match(method: "GET", path: "/" + parts[0]) else {
                Issue.record("no route for \(read)")
                continue
            }
            #expect(match.endpoint.admits(.operatorKey, query: parts.count > 1 ? parts[1] : nil), "\(read)")
        }
    }
}
