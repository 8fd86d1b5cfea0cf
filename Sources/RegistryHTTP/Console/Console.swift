import HTTPServer

/// The operator console: one page, its script and its stylesheet, compiled
/// into the binary from the files beside this one (SwiftPM `.embedInCode`,
/// as `PackageResources.console_html`, `app_js`, `app_css`): no build step,
/// nothing to fetch, nothing beside the executable.
///
/// The three answers hold no data, so they need no credential (like
/// `/openapi.json`); the script reads the internal API with the key the
/// operator pastes, which it keeps in the tab's `sessionStorage` and sends
/// as `Authorization` (never a cookie, so another site cannot make the
/// browser use it). The headers shut what a page could leak through: no
/// script or style but these two files, no other origin, no framing, no
/// form posting, no referrer, nothing cached, and Trusted Types required so
/// no HTML string can be injected into the page (values go in as text).
enum Console {
    static let contentSecurityPolicy = [
        "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src data:", "connect-src 'self'",
        "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
        "require-trusted-types-for 'script'", "trusted-types 'none'",
    ].joined(separator: "; ")

    static let securityHeaders = [
        ("Content-Security-Policy", contentSecurityPolicy),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
        ("X-Frame-Options", "DENY"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Cross-Origin-Resource-Policy", "same-origin"),
    ]

    static func response(_ body: [UInt8], contentType: String) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", contentType)] + securityHeaders, body: body)
    }
}

extension RegistryApplication {
    func consolePage(_ call: Call) throws -> HTTPResponse {
        Console.response(PackageResources.console_html, contentType: "text/html; charset=utf-8")
    }

    func consoleScript(_ call: Call) throws -> HTTPResponse {
        Console.response(PackageResources.app_js, contentType: "text/javascript; charset=utf-8")
    }

    func consoleStylesheet(_ call: Call) throws -> HTTPResponse {
        Console.response(PackageResources.app_css, contentType: "text/css; charset=utf-8")
    }
}
