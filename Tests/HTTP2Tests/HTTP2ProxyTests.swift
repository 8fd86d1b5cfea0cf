import HTTP2
import Testing

/// `--delivery-proxy`'s URL: what libcurl is given (the port always
/// named, credentials apart), what logs show, and what is refused without
/// quoting the value.
@Suite struct HTTP2ProxyTests {
    @Test func aProxyURLIsSplitIntoURLAndCredentials() throws {
        let plain = try HTTP2Proxy.parse("http://proxy.internal:3128")
        #expect(plain.url == "http://proxy.internal:3128" && plain.username == nil)
        #expect(plain.description == "http://proxy.internal:3128")
        // The scheme's port, not libcurl's 1080.
        #expect(try HTTP2Proxy.parse("HTTP://proxy/").url == "http://proxy:80")
        #expect(try HTTP2Proxy.parse("https://proxy").url == "https://proxy:443")
        #expect(try HTTP2Proxy.parse("http://[fd00::1]:8080").url == "http://[fd00::1]:8080")
        let withCredentials = try HTTP2Proxy.parse("https://relay:s3cr%3At%40pw@10.0.0.7:8443")
        #expect(withCredentials.url == "https://10.0.0.7:8443")
        #expect(withCredentials.username == "relay")
        #expect(withCredentials.description == "https://relay:***@10.0.0.7:8443")
        #expect(!"\(withCredentials)".contains("s3cr"))
    }

    @Test(arguments: ["socks5://proxy:1080", "proxy:3128", "http://", "http://:3128", "http://u:hunter2@", "http://proxy:3128/path",
                      "http://proxy:3128?q", "http://proxy:0", "http://proxy:65536", "http://proxy:x", "http://pro xy:1",
                      "http://[fd00::1", "http://%zz:hunter2@proxy:1", "http://:hunter2@proxy:1", "http://u:%e2@proxy:1"])
    func aURLThatIsNoProxyIsRefusedWithoutQuotingIt(_ text: String) {
        let error = #expect(throws: HTTP2ProxyError.self) { try HTTP2Proxy.parse(text) }
        #expect(error.map { !$0.description.contains("hunter2") && !$0.description.contains(text) } == true, "\(String(describing: error))")
    }
}
