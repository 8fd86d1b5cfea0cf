import TokenSealing
import Foundation
import Glibc
import RegistryCore
import RegistryLMDB

/// The child process of the map-growth failure test: caps its own address
/// space (RLIMIT_AS) a little above what it uses, then writes large records
/// until the map cannot grow. It must then fail cleanly: the write refused,
/// a later read refused (not a crash on LMDB's dangling map), the store
/// unhealthy. Prints what it saw and exits 3; exits 4 if growth never failed.
enum GrowthLimitProbe {
    static func run(directory: String, headroomMiB: Int) async {
        // AddressSanitizer and ThreadSanitizer reserve terabytes of shadow
        // memory up front (TSan's allocator then runs out under the limit),
        // so an address-space limit tests nothing but the sanitizer there.
        for (symbol, name) in [("__asan_init", "AddressSanitizer"), ("__tsan_init", "ThreadSanitizer")]
        where dlsym(UnsafeMutableRawPointer(bitPattern: 0), symbol) != nil {
            say("skipped: built with \(name)")
            exit(5)
        }
        var configuration = LMDBRegistryStore.Configuration(directory: directory, tokenKeys: try! BenchKeys.ring(forEnvironment: directory))
        configuration.initialMapSize = 1 << 20
        let store: LMDBRegistryStore
        do {
            store = try LMDBRegistryStore(configuration: configuration)
            try await writeBatch(store, from: 0, count: 64)
        } catch {
            say("setup failed: \(error)")
            exit(1)
        }
        guard let used = virtualMemoryBytes() else {
            say("cannot read VmSize")
            exit(1)
        }
        var limit = rlimit(rlim_cur: rlim_t(used + headroomMiB << 20), rlim_max: rlim_t.max)
        guard setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit) == 0 else {
            say("setrlimit failed")
            exit(1)
        }
        var next = 64
        while next < 400_000 {
            do {
                try await writeBatch(store, from: next, count: 64)
                next += 64
            } catch {
                say("write refused: \(error)")
                do {
                    _ = try await store.devices(userId: "grow-0")
                    say("read answered after the failure")
                } catch {
                    say("read refused: \(error)")
                }
                say("healthy: \(store.isHealthy)")
                exit(3)
            }
        }
        say("no growth failure after \(next) writes")
        exit(4)
    }

    /// `count` devices, each with a 512-byte push token (1,024 hex digits), so the map fills fast.
    private static func writeBatch(_ store: LMDBRegistryStore, from start: Int, count: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in start..<start + count {
                group.addTask {
                    let hex = String(i, radix: 16)
                    let token = String(repeating: "a", count: 1_024 - hex.count) + hex
                    _ = try await store.registerDevice(DeviceRegistration(userId: "grow-\(i)", deviceId: "d", pushToken: .set(token)))
                }
            }
            try await group.waitForAll()
        }
    }

    private static func virtualMemoryBytes() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmSize:") }),
              let kiB = Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") else { return nil }
        return kiB * 1024
    }

    private static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
