import Foundation
import RegistryCore
import TokenSealing

/// `registryd rotate-token-key`: a new sealing key, every token re-sealed
/// under it, the old keys retired; beside running servers, without losing a
/// token (`TokenKeyRotation` says how).
enum RotateTokenKeyCommand: Subcommand {
    static let help = CommandHelp(
        name: "rotate-token-key", synopsis: "[--data-dir DIR] [--token-key-file F] [--server-wait D]",
        tagline: "seal every token under a new key, retire the old one",
        summary: """
            Adds a new sealing key to the token key file (DIR/secrets/token-keys or
            --token-key-file), keeping the file's owner and mode (run it as root or as the file's
            owner), makes the key current in the registry, waits until every running server has
            loaded it (they look once a second), re-seals every stored token under it in short
            write steps, and only then removes the old keys from the key file. One rotation runs
            at a time. The index key (which finds records by token) does not change. Back up the
            new key file: a backup taken before the rotation needs the old one.
            With --store postgres every node must read a key file with the new key (shared
            storage, or copied before the rotation): a node without it refuses writes that store
            a token (503) until it has it, and the rotation stops before retiring anything.
            Stopped anywhere, the key file keeps every key a token may be sealed under; running
            the command again finishes the rotation.
            """,
        flags: ["server-wait"] + Flags.store,
        example: """
            registryd rotate-token-key --data-dir /var/lib/registryd
            added sealing key 2; every server holds it; re-sealed 300000 tokens; retired key 1
            """)

    /// Opens the store itself (not through `OperatorCommand`): a missing key
    /// file is named as such, never generated.
    static func run(_ arguments: Arguments) throws -> Int32 {
        let settings = try Settings(arguments)
        let path = settings.tokenKeyFilePath
        let serverWait = try Settings.duration(arguments, "server-wait")
        let store = try settings.openStore(.existing)
        defer { store.shutdown() }
        let progress = ProgressLine("re-seal", unit: .records, total: nil)
        var rotation = TokenKeyRotation(store: store, keyFile: path)
        rotation.serverWait = serverWait ?? rotation.serverWait
        rotation.onWaiting = { servers in
            Command.printError("waiting for \(servers.map(\.description).joined(separator: ", ")) to load the new key")
        }
        rotation.onProgress = { progress.update($0) }
        let outcome: TokenKeyRotation.Outcome
        do {
            outcome = try rotation.run()
        } catch let error as TokenKeyFileError {
            progress.finish()
            throw Arguments.Failure(description: "--token-key-file: \(error)")
        } catch let error as KeyRotationError {
            progress.finish()
            Command.printError("registryd rotate-token-key: \(error)")
            return 1
        }
        progress.finish()
        let retired = outcome.retiredKeyIDs.map(String.init).joined(separator: ", ")
        print("\(outcome.resumed ? "resumed the rotation to" : "added") sealing key \(outcome.newKeyID); every server holds it; "
              + "re-sealed \(outcome.resealed) tokens" + (retired.isEmpty ? "" : "; retired key \(retired)"))
        return 0
    }
}
