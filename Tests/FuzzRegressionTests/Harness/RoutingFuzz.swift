import Codecs
@testable import HTTPServer
@testable import RegistryHTTP

/// Fuzz target `routing`: request-target splitting, the route table, path
/// segment percent-decoding and checks, and query parsing, as the handlers
/// chain them.
///
/// Properties: nothing traps; a route's raw path parameter never holds a
/// `/` (segments are split before decoding), so every `/` in a decoded
/// parameter came from a `%2F`; percent-decoding agrees with an independent
/// decoder written here; a decoded segment re-encoded decodes to itself.
enum RoutingFuzz {
    static let methods = ["GET", "POST", "DELETE", "HEAD", "PUT"]

    static func run(_ bytes: [UInt8]) -> [String] {
        var check = FuzzCheck()
        let target = String(decoding: bytes, as: UTF8.self)
        let (path, query) = HTTPRequest.splitTarget(target)
        check.expect(!path.contains("?"), "the path keeps a '?': \(target)")
        for method in methods {
            guard case .success(let match) = Router.match(method: method, path: path),
                  let raw = match.rawParameter, let field = match.endpoint.parameterName,
                  let rule = rules[field] else { continue }
            check.expect(!raw.contains("/"), "a path parameter holds a raw '/': \(path)")
            let decoded = PercentDecoding.decode(raw)
            check.expect(decoded == referenceDecode(raw).flatMap { String(validating: $0, as: UTF8.self) },
                         "percent-decoding disagrees with the reference decoder on \(raw)")
            if let decoded {
                let slashes = decoded.utf8.filter { $0 == UInt8(ascii: "/") }.count
                check.expect(slashes == encodedSlashes(raw), "a decoded '/' that was not sent as %2F: \(raw)")
                check.expect(PercentDecoding.decode(encode(decoded)) == decoded, "re-encoding does not round-trip: \(raw)")
            }
            _ = try? FieldCheck.pathSegment(raw, field: field, check: rule)
        }
        if let parameters = try? QueryParameters(query) {
            if let text = try? parameters.single("sequence") { _ = try? FieldCheck.sequence(text) }
            if let text = try? parameters.single("limit") { _ = UInt64(decimalDigits: text) }
            _ = try? parameters.single("cursor")
            _ = try? parameters.single("deviceId")
        }
        return check.violations
    }

    /// The check each path parameter's handler applies, by template field name.
    static let rules: [String: @Sendable (String, String) throws(APIError) -> String] = [
        "deviceId": { (v: String, f: String) throws(APIError) -> String in try FieldCheck.deviceId(v, field: f) },
        "activityId": { (v: String, f: String) throws(APIError) -> String in try FieldCheck.activityId(v, field: f) },
        "userId": { (v: String, f: String) throws(APIError) -> String in try FieldCheck.userId(v, field: f) },
    ]

    /// RFC 3986 §2.1 by the book: `%` and two hex digits is one byte, a `%`
    /// otherwise is an error; everything else is itself.
    static func referenceDecode(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        var output: [UInt8] = []
        var i = 0
        while i < input.count {
            if input[i] == UInt8(ascii: "%") {
                guard i + 2 < input.count, let hi = hex(input[i + 1]), let lo = hex(input[i + 2]) else { return nil }
                output.append(hi * 16 + lo)
                i += 3
            } else {
                output.append(input[i])
                i += 1
            }
        }
        return output
    }

    static func encodedSlashes(_ text: String) -> Int {
        let input = Array(text.utf8)
        var count = 0
        var i = 0
        while i + 2 < input.count {
            if input[i] == UInt8(ascii: "%") {
                if hex(input[i + 1]) == 2, hex(input[i + 2]) == 15 { count += 1 }
                i += 3
            } else {
                i += 1
            }
        }
        return count
    }

    /// Percent-encodes every byte outside RFC 3986's unreserved set.
    static func encode(_ text: String) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                output.append(b)
            default:
                output += [UInt8(ascii: "%"), digits[Int(b >> 4)], digits[Int(b & 0xF)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
