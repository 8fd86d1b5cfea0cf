import Glibc

/// Parsers for flag values; each failure message follows the flag's name.
enum ValueParsing {
    /// A positive whole number with an optional unit `s`, `m`, `h` or `d`
    /// (seconds when bare), up to 100 years.
    static func duration(_ text: String) -> Duration? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var digits = Substring(text)
        var multiplier: Int64 = 1
        if let last = text.last, let unit = units[last] {
            multiplier = unit
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let n = Int64(digits), n > 0 else { return nil }
        let (seconds, overflow) = n.multipliedReportingOverflow(by: multiplier)
        guard !overflow, seconds <= 100 * 365 * 86_400 else { return nil }
        return .seconds(seconds)
    }

    static let durationRule = "must be a positive whole number with an optional unit s, m, h or d"

    /// A positive whole number up to `max`.
    static func positiveInt(_ text: String, max: Int) -> Int? {
        guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int(text), n >= 1, n <= max else { return nil }
        return n
    }

    /// `HOST:PORT`, `[IPv6]:PORT`; HOST an IP literal or `localhost`.
    static func listenAddress(_ text: String) -> (host: String, port: UInt16)? {
        let host: String
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = text[text.index(close, offsetBy: 2)...]
            guard isIPv6(host) else { return nil }
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            let name = String(text[..<colon])
            portText = text[text.index(after: colon)...]
            host = name == "localhost" ? "127.0.0.1" : name
            guard isIPv4(host) else { return nil }
        }
        guard !portText.isEmpty, portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let port = UInt16(portText) else { return nil }
        return (host, port)
    }

    private static func isIPv4(_ host: String) -> Bool {
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1
    }

    private static func isIPv6(_ host: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET6, host, &address) == 1
    }
}
