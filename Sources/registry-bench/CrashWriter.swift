import TokenSealing
import Foundation
import RegistryCore
import RegistryLMDB

/// The child process of the crash-recovery test: commits `count` upserts,
/// says so on stdout, then dies by SIGKILL without closing anything, so the
/// test can check that every write that returned survived an unclean stop.
///
/// The records it writes are fixed by `count` alone (user `crash-user-<i>`,
/// device `device`, push token `crashToken(i)`), so the test can read every
/// one back.
enum CrashWriter {
    static func run(directory: String, count: Int) async {
        do {
            let store = try LMDBRegistryStore(configuration: LMDBRegistryStore.Configuration(
                directory: directory, tokenKeys: try BenchKeys.ring(forEnvironment: directory)))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<count {
                    group.addTask {
                        _ = try await store.registerDevice(DeviceRegistration(
                            userId: "crash-user-\(i)", deviceId: "device", pushToken: .set(crashToken(i)), sequence: 1))
                    }
                }
                try await group.waitForAll()
            }
            FileHandle.standardOutput.write(Data("committed \(count)\n".utf8))
            kill(getpid(), SIGKILL)
        } catch {
            FileHandle.standardError.write(Data("crash-writer failed: \(error)\n".utf8))
            exit(1)
        }
    }

    /// The push token of record `i`: 64 hex digits.
    static func crashToken(_ i: Int) -> String {
        let hex = String(i, radix: 16)
        return String(repeating: "0", count: 64 - hex.count) + hex
    }
}
