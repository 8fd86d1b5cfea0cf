import Foundation
import Glibc
import Synchronization

/// A one-thread HTTP/1.1 server on 127.0.0.1 and a free port, for the
/// transport's tests: it records each request's head and answers it with
/// `answer` (the whole response, closed after it). Enough for a redirect;
/// nothing else in the tests needs a socket they control.
final class TinyHTTPServer: Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let port: Int
    private let listener: Int32
    private let heads = Mutex<[String]>([])

    /// The heads (request line and headers) received so far.
    var received: [String] { heads.withLock { $0 } }

    init(answer: @escaping @Sendable (String) -> String) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(listener, address, length) == 0 && listen(listener, 8) == 0
                    && getsockname(listener, address, &length) == 0
            }
        }
        guard listener >= 0, bound else { throw Failure(description: "cannot listen: \(String(cString: strerror(errno)))") }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in serve(answer) }
    }

    /// Stops accepting; the serving thread closes the socket.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func serve(_ answer: @Sendable (String) -> String) {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { break }
            let head = readRequest(connection)
            heads.withLock { $0.append(head) }
            let bytes = Array(answer(head).utf8)
            _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            close(connection)
        }
        close(listener)
    }

    /// The head, after reading the body `Content-Length` announces.
    private func readRequest(_ connection: Int32) -> String {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let separator = Array("\r\n\r\n".utf8)
        while true {
            if let end = data.indices.first(where: { data[$0...].starts(with: separator) }) {
                let head = String(decoding: data[..<end], as: UTF8.self)
                let length = head.split(separator: "\r\n")
                    .first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if data.count >= end + separator.count + length { return head }
            }
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return String(decoding: data, as: UTF8.self) }
            data += buffer[..<count]
        }
    }
}
