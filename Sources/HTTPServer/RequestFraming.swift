/// The framing checks the server makes itself, on the headers alone, before
/// the application sees the request (the contract's first check: 400, 431).
///
/// libmicrohttpd frames the body itself and, in 0.9.75, uses chunked
/// decoding when `Transfer-Encoding: chunked` is present and ignores any
/// `Content-Length` (then takes the first `Content-Length`); it answers a
/// non-numeric `Content-Length` with its own 400 before we are called.
/// These checks reject what it would let through, so request smuggling
/// through disagreeing framing headers is refused here.
enum RequestFraming {
    /// How the request's body is delimited.
    enum Body: Equatable {
        case none
        case length(Int)
        case chunked

        var expected: Bool { self != .none }
    }

    enum Verdict {
        case accept(Body)
        case reject(HTTPResponse)
    }

    /// `headerBytes` is the size of the request line plus every header line
    /// as sent (names, values, separators and line ends).
    static func check(_ headers: HTTPHeaders, headerBytes: Int, maxHeaderBytes: Int) -> Verdict {
        if headerBytes > maxHeaderBytes {
            return .reject(.error(status: 431, code: "headers_too_large",
                                  message: "request headers exceed \(maxHeaderBytes) bytes", closeConnection: true))
        }
        var encodings: [String] = []
        var lengths: [String] = []
        for (name, value) in headers.pairs {
            if HTTPHeaders.sameName(name, "Content-Length") {
                lengths.append(value)
            } else if HTTPHeaders.sameName(name, "Transfer-Encoding") {
                encodings.append(value)
            }
        }
        if !encodings.isEmpty && !lengths.isEmpty {
            return badRequest("both Content-Length and Transfer-Encoding are present")
        }
        if !encodings.isEmpty {
            let codings = encodings.flatMap(listItems).map { $0.lowercased() }
            guard codings == ["chunked"] else {
                return badRequest("Transfer-Encoding must be chunked")
            }
            return .accept(.chunked)
        }
        guard !lengths.isEmpty else { return .accept(.none) }
        let items = lengths.flatMap(listItems)
        guard !items.isEmpty, items.allSatisfy(isDecimal) else {
            return badRequest("Content-Length is not a number")
        }
        guard Set(items.map(stripLeadingZeros)).count == 1, let length = Int(items[0]) else {
            return badRequest("conflicting Content-Length headers")
        }
        return .accept(length > 0 ? .length(length) : .none)
    }

    private static func badRequest(_ message: String) -> Verdict {
        .reject(.error(status: 400, code: "bad_request", message: message, closeConnection: true))
    }

    /// The comma-separated items of a header value, trimmed of spaces and tabs.
    private static func listItems(_ value: String) -> [String] {
        value.split(separator: ",", omittingEmptySubsequences: false)
            .map { String($0.drop(while: isBlank).reversed().drop(while: isBlank).reversed()) }
    }

    private static func isBlank(_ c: Character) -> Bool { c == " " || c == "\t" }

    private static func isDecimal(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 18 && text.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    private static func stripLeadingZeros(_ text: String) -> Substring {
        let stripped = text.drop { $0 == "0" }
        return stripped.isEmpty ? "0" : stripped
    }
}
