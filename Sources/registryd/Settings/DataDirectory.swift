/// The layout of a data directory: what `serve` creates on first start,
/// what every subcommand opens, and what `backup` writes, so a backup is a
/// data directory as it is.
///
/// | path | holds |
/// | --- | --- |
/// | `lmdb/` | the LMDB environment (`data.mdb`, `lock.mdb`); absent with `--store postgres` |
/// | `secrets/` | generated secrets (0700; files 0600), `token-keys` among them |
/// | `registryd.lock` | `serve`'s lock, holding its pid (LMDB only) |
/// | `backup.json` | in a backup: when it was taken, schema version, counts |
struct DataDirectory: Sendable {
    let path: String

    var lmdb: String { path + "/lmdb" }
    var secrets: String { path + "/secrets" }
    /// The keys tokens are sealed and indexed with, unless `--token-key-file` names others.
    var tokenKeys: String { secrets + "/token-keys" }
    var lockFile: String { path + "/registryd.lock" }
    var backupManifest: String { path + "/backup.json" }
}
