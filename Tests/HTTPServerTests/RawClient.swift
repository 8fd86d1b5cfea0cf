import Foundation
import Glibc

/// A deliberately dumb HTTP client over a raw TCP socket, so tests can send
/// exactly the bytes they mean, malformed ones included, and watch the
/// connection itself (closed or not). Every receive has a timeout, so a
/// server that never answers fails the test instead of hanging it.
final class RawClient {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// One parsed response.
    struct Response {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]

        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }

        var text: String { String(decoding: body, as: UTF8.self) }
    }

    private let fd: Int32
    private var buffer: [UInt8] = []

    /// `source`: an IPv4 address to connect from (all of 127.0.0.0/8 is
    /// loopback on Linux, so 127.0.0.2 and 127.0.0.3 are two clients).
    init(port: UInt16, host: String = "127.0.0.1", source: String? = nil, timeoutSeconds: Int = 5) throws {
        let family = host.contains(":") ? AF_INET6 : AF_INET
        fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if let source {
            guard Self.bind(fd, to: source) else {
                let reason = String(cString: strerror(errno))
                close(fd)
                throw Failure(description: "bind \(source): \(reason)")
            }
        }
        let connected: Int32
        if family == AF_INET6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            inet_pton(AF_INET6, host, &address.sin6_addr)
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            inet_pton(AF_INET, host, &address.sin_addr)
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "connect: \(reason)")
        }
    }

    deinit {
        close(fd)
    }

    /// Binds `fd` to an IPv4 source address, any port.
    static func bind(_ fd: Int32, to source: String) -> Bool {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        guard inet_pton(AF_INET, source, &address.sin_addr) == 1 else { return false }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Sends `pieces` one every `interval` seconds (the first at once), and
    /// returns how many seconds after the call the server closed the
    /// connection, or nil if it was still open `interval` after the last piece.
    func secondsUntilClosed(sending pieces: [String], every interval: Double) -> Double? {
        let started = Date()
        for piece in pieces {
            if (try? send(piece)) == nil || isClosedByPeer(withinSeconds: interval) {
                return Date().timeIntervalSince(started)
            }
        }
        return nil
    }

    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw Failure(description: "send: \(String(cString: strerror(errno)))") }
            offset += sent
        }
    }

    /// Reads one response; `bodiless` for answers to HEAD. Throws when the
    /// connection closes or times out before a whole response arrived.
    func readResponse(bodiless: Bool = false) throws -> Response {
        let headerEnd = try fill { Self.find([13, 10, 13, 10], in: $0) }
        let head = String(decoding: buffer[..<headerEnd], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw Failure(description: "bad status line in \(head)")
        }
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]),
                    line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        buffer.removeFirst(headerEnd + 4)
        var response = Response(status: status, headers: headers, body: [])
        let length = bodiless ? 0 : (response.header("Content-Length").flatMap { Int($0) } ?? 0)
        _ = try fill { $0.count >= length ? length : nil }
        response.body = Array(buffer[..<length])
        buffer.removeFirst(length)
        return response
    }

    /// True when the server closes the connection (EOF or reset) within the
    /// timeout; false when it stays open and silent. Unread bytes are dropped.
    func isClosedByPeer(withinSeconds seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var scratch = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 50)
            guard ready > 0 else { continue }
            let count = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return true }
        }
        return false
    }

    /// Receives until `complete` finds what it needs in the buffer.
    private func fill(_ complete: ([UInt8]) -> Int?) throws -> Int {
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if let found = complete(buffer) { return found }
            let count = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { throw Failure(description: "connection closed by server") }
            if count < 0 { throw Failure(description: "recv: \(String(cString: strerror(errno)))") }
            buffer.append(contentsOf: scratch[..<count])
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start..<start + needle.count].elementsEqual(needle) {
            return start
        }
        return nil
    }
}
