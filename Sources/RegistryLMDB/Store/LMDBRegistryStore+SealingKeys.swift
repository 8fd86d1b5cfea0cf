import RegistryCore
import LMDB
import TokenSealing

/// How the LMDB store keeps its sealing keys right: which keys the registry
/// uses (each key ever made current has a check value in `meta`, sealed
/// under it, until a rotation retires it), and the checks that a key file
/// is the registry's before any process seals with it.
extension LMDBRegistryStore {
    /// The open-time check: the ring's sealing keys must be the registry's
    /// (`verifySealingKeys`; the current key's check value is recorded the
    /// first time it is used here), and every key the registry may still
    /// use must be in the ring. A recorded key the ring lacks is refused
    /// when a stored value uses it (the whole store is scanned then, once);
    /// an unused one (a rotation that stopped after retiring it from the key
    /// file) loses its check value. The key a rotation announced must be in
    /// the ring too: a server started with an old copy of the key file would
    /// otherwise serve refusing every write that stores a token. A value that
    /// merely fails to authenticate (damage) is left to `check`: one bad
    /// value must not lock the registry out.
    static func checkSealingKeys(_ txn: WriteTransaction, _ schema: Schema, _ vault: TokenVault) throws {
        try verifySealingKeys(vault.ring, txn, schema)
        if let announced = try txn.get(Schema.MetaKey.sealingKeyID, in: schema.meta)?.first,
           vault.ring.sealingKey(id: announced) == nil {
            throw RegistryOpenError.wrongTokenKeys(detail: "a key rotation made sealing key \(announced) current, and the file does not hold it")
        }
        let current = Schema.MetaKey.sealingKeyCheck + [vault.ring.currentKeyID]
        if try txn.get(current, in: schema.meta) == nil { try txn.put(vault.keyCheck(), for: current, in: schema.meta) }
        let missing = try recordedKeyIDs(txn, schema).filter { vault.ring.sealingKey(id: $0) == nil }
        guard !missing.isEmpty else { return }
        let used = try keysInUse(txn, schema, vault)
        if let id = missing.first(where: { used[$0] != nil }) {
            throw RegistryOpenError.wrongTokenKeys(detail: "\(used[id] ?? 0) stored tokens are sealed under key \(id), which it does not hold")
        }
        for id in missing { _ = try txn.delete(Schema.MetaKey.sealingKeyCheck + [id], in: schema.meta) }
    }

    /// Every sealing key of `ring` that the registry recorded a check value
    /// for must open it: a key file holding another key under a known id is
    /// refused (at open, and when a running process reloads the file).
    static func verifySealingKeys(_ ring: TokenKeyRing, _ txn: ReadTransaction, _ schema: Schema) throws {
        let vault = TokenVault(ring: ring)
        for key in ring.sealingKeys {
            guard let stored = try txn.get(Schema.MetaKey.sealingKeyCheck + [key.id], in: schema.meta) else { continue }
            guard vault.opensKeyCheck(stored) else {
                throw RegistryOpenError.wrongTokenKeys(detail: "sealing key \(key.id) is not the one this registry used")
            }
        }
    }

    /// The key ids `meta` holds check values for: every key made current
    /// here and not retired since.
    static func recordedKeyIDs(_ txn: ReadTransaction, _ schema: Schema) throws -> [UInt8] {
        var ids: [UInt8] = []
        try txn.scan(schema.meta, prefix: Schema.MetaKey.sealingKeyCheck) { key, _ in
            if key.count == Schema.MetaKey.sealingKeyCheck.count + 1, let id = key.last { ids.append(id) }
            return true
        }
        return ids
    }

    /// How many stored values each sealing key id seals (a read of every token).
    static func keysInUse(_ txn: ReadTransaction, _ schema: Schema, _ vault: TokenVault) throws -> [UInt8: Int] {
        var usage: [UInt8: Int] = [:]
        for kind in TokenKind.allCases {
            try txn.scan(schema.database(kind)) { _, value in
                if let id = try TokenValue.sealingKeyID(of: value, vault) { usage[id, default: 0] += 1 }
                return true
            }
        }
        return usage
    }

    /// What `reload` checks of a key file before a running process uses it.
    var keyFileChecks: (TokenKeyRing) throws -> Void {
        { [environment, schema] ring in try environment.read { txn in try Self.verifySealingKeys(ring, txn, schema) } }
    }
}
