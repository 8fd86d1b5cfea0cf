import Foundation
import Glibc
import Synchronization

/// Many connections from one source address that each start a request and
/// then send one more header line every `interval`, never finishing the
/// head: the slow-loris attack. One thread feeds them all, spreading the
/// lines evenly over each interval. `stop` ends it and closes every socket.
final class SlowLoris: Sendable {
    private let sockets: [Int32]
    private let interval: Double
    private let started = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(port: UInt16, source: String, count: Int, interval: Double) throws {
        self.interval = interval
        var sockets: [Int32] = []
        sockets.reserveCapacity(count)
        do {
            for index in 0..<count {
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                guard fd >= 0 else { throw RawClient.Failure(description: "socket: \(String(cString: strerror(errno)))") }
                sockets.append(fd)
                guard RawClient.bind(fd, to: source) else {
                    throw RawClient.Failure(description: "bind \(source): \(String(cString: strerror(errno)))")
                }
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = port.bigEndian
                inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
                let connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                guard connected == 0 else {
                    throw RawClient.Failure(description: "connect #\(index): \(String(cString: strerror(errno)))")
                }
                Self.send(fd, "GET /slow-loris/\(index) HTTP/1.1\r\nHost: t\r\n")
            }
        } catch {
            for fd in sockets { close(fd) }
            throw error
        }
        self.sockets = sockets
    }

    func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in feed() }
        thread.name = "slow-loris"
        thread.start()
    }

    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if started.load(ordering: .acquiring) { finished.wait() }
        for fd in sockets { close(fd) }
    }

    /// Sockets the server has closed: the server never answers an
    /// unfinished head, so anything readable is end of stream or a reset.
    var closedByServer: Int {
        var fds = sockets.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        _ = poll(&fds, nfds_t(fds.count), 0)
        return fds.filter { $0.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 }.count
    }

    private func feed() {
        let batches = 10
        var line = 0
        while !stopping.load(ordering: .acquiring) {
            for batch in 0..<batches where !stopping.load(ordering: .acquiring) {
                for fd in sockets[(sockets.count * batch / batches)..<(sockets.count * (batch + 1) / batches)] {
                    Self.send(fd, "X-Line-\(line): keep me waiting\r\n")
                }
                Thread.sleep(forTimeInterval: interval / Double(batches))
            }
            line += 1
        }
        finished.signal()
    }

    private static func send(_ fd: Int32, _ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
    }
}
