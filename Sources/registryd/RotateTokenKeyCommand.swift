import Foundation
import Registry
import TokenSealing

/// `registryd rotate-token-key`: a new sealing key, every token re-sealed
/// under it, the old keys retired; beside a running server.
///
/// 1. The key file gains a new key, made current (atomic write).
/// 2. The store opened with it announces the key in `meta`; from then on
///    every write of every process seals under it (a server reloads the
///    key file when it sees the announcement, or meets a value under a key
///    it does not know).
/// 3. Every token sealed under another key is re-sealed, in bounded write
///    steps; a pass that finds none left under an old key ends it.
/// 4. The old keys, now unused, are removed from the key file.
///
/// Stopped half-way (a crash), the key file holds old and new keys and
/// nothing is lost; running it again finishes (with one more new key).
enum RotateTokenKeyCommand: Subcommand {
    static let help = CommandHelp(
        name: "rotate-token-key", synopsis: "[--data-dir DIR] [--token-key-file F]",
        tagline: "seal every token under a new key, retire the old one",
        summary: """
            Adds a new sealing key to the token key file (DIR/secrets/token-keys or
            --token-key-file), makes it current, re-seals every stored token under it in short
            write steps while a server may be running (the server reloads the key file by
            itself), and then removes the old keys, which no value uses any more. The index
            key (which finds records by token) does not change. Back up the new key file:
            a backup taken before the rotation needs the old one. Run it where the server's
            key file is (give the same --token-key-file). With --store postgres every node must
            read this very file (shared storage): a node whose copy lacks the new key cannot
            open the tokens re-sealed under it.
            """,
        flags: Flags.store,
        example: """
            registryd rotate-token-key --data-dir /var/lib/registryd
            added sealing key 2; re-sealed 300000 tokens; retired key 1
            """)

    /// Passes before giving up on values still appearing under an old key
    /// (a server that cannot read the new key file keeps sealing with the old one).
    static let maxPasses = 5
    /// Tokens re-sealed per write transaction.
    static let batchSize = 500

    /// Opens the store itself (not through `OperatorCommand`): the key file
    /// is rotated before the store is opened with it.
    static func run(_ arguments: Arguments) throws -> Int32 {
        let settings = try Settings(arguments)
        let path = settings.tokenKeyFile ?? settings.layout.tokenKeys
        if case .lmdb = settings.backend, !FileManager.default.fileExists(atPath: settings.layout.lmdb) {
            throw Arguments.Failure(description: "--data-dir: no registry at '\(settings.dataDirectory)'")
        }
        let old: TokenKeyRing
        do {
            old = try TokenKeyFile.load(path: path)
        } catch {
            throw Arguments.Failure(description: "--token-key-file: \(error)")
        }
        let rotated = try old.addingRandomKey()
        let newID = rotated.currentKeyID
        try TokenKeyFile.write(rotated, to: path)
        let store = try settings.openStore(.existing)
        defer { store.shutdown() }
        try Blocking.result { try await store.announceSealingKey() }.get()

        let progress = ProgressLine("re-seal", unit: .records, total: nil)
        var resealed = 0
        var pass = 0
        while true {
            pass += 1
            resealed += try Blocking.result {
                try await store.resealTokens(batchSize: batchSize, progress: { progress.update($0) })
            }.get()
            let usage = try Blocking.result { try await store.sealingKeyUsage() }.get()
            let stillOld = usage.filter { $0.key != newID }.values.reduce(0, +)
            if stillOld == 0 { break }
            guard pass < maxPasses else {
                progress.finish()
                Command.printError("registryd rotate-token-key: \(stillOld) tokens are still sealed under an old key after \(pass) passes; a process writing to this registry does not use '\(path)'. Both keys stay in the key file; run again once every server uses it.")
                return 1
            }
        }
        progress.finish()
        var retired = rotated
        for key in rotated.sealingKeys where key.id != newID { retired = try retired.retiring(key.id) }
        try TokenKeyFile.write(retired, to: path)
        let retiredIDs = rotated.sealingKeys.map(\.id).filter { $0 != newID }.map(String.init).joined(separator: ", ")
        print("added sealing key \(newID); re-sealed \(resealed) tokens; retired key \(retiredIDs)")
        return 0
    }
}
