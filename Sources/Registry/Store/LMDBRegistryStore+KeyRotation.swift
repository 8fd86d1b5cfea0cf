import LMDB

/// Token key rotation (`registryd rotate-token-key`), beside a running
/// server: the caller has written a key file whose current key is new and
/// opened the store with it; `announceSealingKey` tells every process to
/// seal under it, `resealTokens` re-seals what older keys sealed, and
/// `sealingKeyUsage` shows when no value uses an old key any more, so it
/// can be retired from the key file.
extension LMDBRegistryStore {
    /// Records the vault's current sealing key in `meta`: every write
    /// command of every process checks it and, when it is not their current
    /// key, reloads the key file first.
    public func announceSealingKey() async throws {
        try await writing { writer in
            try writer.txn.put([writer.vault.ring.currentKeyID], for: Schema.MetaKey.sealingKeyID, in: writer.schema.meta)
        }
    }

    /// How many stored tokens each sealing key id seals.
    public func sealingKeyUsage() throws -> [UInt8: Int] {
        try reading { read in
            var usage: [UInt8: Int] = [:]
            for kind in TokenKind.allCases {
                try read.txn.scan(schema.database(kind)) { _, value in
                    if let id = try TokenValue.sealingKeyID(of: value, read.vault) { usage[id, default: 0] += 1 }
                    return true
                }
            }
            return usage
        }
    }

    /// Re-seals every token not sealed under the current key, in bounded
    /// write commands (at most `batchSize` values each), so a running
    /// server's writes interleave. Each value is re-read and re-written in
    /// its own command's transaction. Returns how many were re-sealed.
    public func resealTokens(batchSize: Int = 500, progress: ((_ visited: Int) -> Void)? = nil) async throws -> Int {
        var resealed = 0, visited = 0
        for kind in TokenKind.allCases {
            var start: [UInt8]?
            repeat {
                try Task.checkCancellation()
                let from = start
                let step = try await writing { writer -> (resealed: Int, visited: Int, resume: [UInt8]?) in
                    let current = writer.vault.ring.currentKeyID
                    let db = writer.schema.database(kind)
                    var entries: [([UInt8], [UInt8])] = []
                    var resume: [UInt8]?
                    try writer.txn.scan(db, from: from) { key, value in
                        if entries.count == max(1, batchSize) {
                            resume = key
                            return false
                        }
                        entries.append((key, value))
                        return true
                    }
                    var count = 0
                    for (key, value) in entries where try TokenValue.sealingKeyID(of: value, writer.vault) != current {
                        let slot = TokenSlot(kind, key: key)
                        let token = try TokenValue(decoding: value, in: slot, writer.vault)
                        try writer.txn.put(token.encoded(in: slot, writer.vault), for: key, in: db)
                        count += 1
                    }
                    return (count, entries.count, resume)
                }
                resealed += step.resealed
                visited += step.visited
                progress?(visited)
                start = step.resume
            } while start != nil
        }
        return resealed
    }
}
