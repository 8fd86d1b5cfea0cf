import Foundation
import Glibc

/// systemd's readiness protocol (`sd_notify(3)`): when started with
/// `Type=notify`, the service manager passes a datagram socket in
/// `NOTIFY_SOCKET`, and `READY=1` sent there marks the service started, so
/// units ordered after registryd start once it answers, not once it forks.
/// No library needed: one `sendto` per state. Without `NOTIFY_SOCKET`
/// (any other supervisor, a terminal) it does nothing.
enum ServiceManagerNotifier {
    /// Sends `state` (e.g. `READY=1\nMAINPID=123`); returns whether it was delivered.
    @discardableResult
    static func notify(_ state: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard var path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return false }
        // An abstract socket is written with a leading '@' and addressed with a leading NUL.
        let isAbstract = path.hasPrefix("@")
        if isAbstract { path.removeFirst() }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let nameBytes = Array(path.utf8)
        let offset = isAbstract ? 1 : 0
        guard nameBytes.count + offset < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: isAbstract ? [0] + nameBytes : nameBytes)
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + offset + nameBytes.count)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, message, message.count, 0, $0, length) }
        }
        return sent == message.count
    }
}
