import Foundation
import TokenSealing
@testable import RegistryCore
@testable import RegistryLMDB
import RegistrydTestSupport
import Testing

/// `registryd check [--repair]` run as an operator would, on a data
/// directory whose indexes were broken on purpose.
extension ExecutableTests {
    /// A registry in `directory/registry-data` holding alice/d1 with a push
    /// token, broken by `damage` (raw writes, in the store's writer).
    private func brokenRegistry(in directory: String,
                                _ damage: @escaping @Sendable (RecordWriter) throws -> Void) async throws -> String {
        let data = directory + "/registry-data"
        // The key file registryd reads for this data directory.
        let keys = try TokenKeyFile.loadOrGenerate(path: data + "/secrets/token-keys").ring
        let store = try LMDBRegistryStore(configuration: LMDBRegistryStore.Configuration(directory: data + "/lmdb", tokenKeys: keys))
        defer { store.shutdown() }
        _ = try await store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "d1",
                                                              pushToken: .set(String(repeating: "a", count: 64))))
        try await store.writing(damage)
        return data
    }

    /// Plain `check` exits 1 naming the problem; `check --repair` prints the
    /// fix and the summary, checks again and exits 0; then `check` is clean.
    @Test func checkRepairFixesAMissingOwnerEntryAndExitsZero() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let data = try await brokenRegistry(in: directory) { writer in
            _ = try writer.txn.delete(writer.vault.ownerKey(String(repeating: "a", count: 64), .push), in: writer.schema.tokenOwners)
        }
        let (broken, found, _) = try await run(["check", "--data-dir", data], in: directory)
        #expect(broken == 1)
        #expect(found == "push token \"alice\"/\"d1\": no owner entry\n1 problem(s) found\n")

        let (repaired, output, errors) = try await run(["check", "--repair", "--data-dir", data], in: directory)
        #expect(repaired == 0, "\(errors)")
        #expect(output == """
            added owner entry for push token of "alice"/"d1"
            repair: 1 fix(es): owner entries added 1
            ok: every index agrees with its records

            """)
        let (clean, _, _) = try await run(["check", "--data-dir", data], in: directory)
        #expect(clean == 0)
    }

    /// What the repair cannot rebuild (an unreadable device value) is left
    /// alone, and the check after it still fails: exit 1.
    @Test func checkRepairExitsOneWhenProblemsRemain() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let data = try await brokenRegistry(in: directory) { writer in
            try writer.txn.put([1, 0, 7], for: RecordID(user: "alice", app: "0", device: "d1").key, in: writer.schema.devices)
        }
        let (status, output, errors) = try await run(["check", "--repair", "--data-dir", data], in: directory)
        #expect(status == 1, "\(errors)")
        #expect(output.contains("left unreadable device \"alice\"/\"d1\" alone\n"), "\(output)")
        #expect(output.contains("repair: nothing to fix; 1 unreadable record(s) left alone\n"), "\(output)")
        #expect(output.contains("device \"alice\"/\"d1\": unreadable value\n"), "\(output)")
        #expect(output.hasSuffix("problem(s) remain after the repair\n"), "\(output)")
    }
}
