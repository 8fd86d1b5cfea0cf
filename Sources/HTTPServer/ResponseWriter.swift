import CMicroHTTPD

/// Turns an `HTTPResponse` into a libmicrohttpd response and queues it.
enum ResponseWriter {
    /// Headers libmicrohttpd owns: it computes the body framing itself and
    /// decides keep-alive from the request and `closeConnection`.
    private static let reserved: Set<String> = ["content-length", "transfer-encoding", "connection"]

    /// Copies the body (.RESPMEM_MUST_COPY), so nothing Swift owns is
    /// borrowed past the call. A header libmicrohttpd refuses (a name or
    /// value with a line break) is dropped rather than failing the response.
    static func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
        let created = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                                            .RESPMEM_MUST_COPY)
        }
        guard let mhdResponse = created else { return .NO }
        defer { MHD_destroy_response(mhdResponse) }
        var json = false, marked = false
        for (name, value) in response.headers where !reserved.contains(name.lowercased()) {
            _ = MHD_add_response_header(mhdResponse, name, value)
            switch name.lowercased() {
            case "content-type": json = value.lowercased().hasPrefix("application/json")
            case "x-content-type-options": marked = true
            default: break
            }
        }
        // A JSON answer is never to be sniffed into something a browser runs.
        if json && !marked {
            _ = MHD_add_response_header(mhdResponse, "X-Content-Type-Options", "nosniff")
        }
        if response.closeConnection {
            _ = MHD_add_response_header(mhdResponse, "Connection", "close")
        }
        return MHD_queue_response(connection, UInt32(clamping: response.status), mhdResponse)
    }
}
