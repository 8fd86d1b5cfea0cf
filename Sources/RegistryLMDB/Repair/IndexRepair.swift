import Codecs
import RegistryCore
import LMDB

/// What `rebuildIndexes` fixed, counted by kind, with the first
/// `lineLimit` fixes as lines an operator can read.
public struct RepairReport: Sendable, Hashable {
    /// Expiry entries put back for a device, an activity token, a tombstone or a history event.
    public var expiryEntriesAdded = 0
    /// Expiry entries deleted: no record, a record in another hour bucket, or malformed.
    public var expiryEntriesRemoved = 0
    /// Token owner entries put back for a token no entry named.
    public var ownerEntriesAdded = 0
    /// Owner entries that named a holder not holding the token (or could not
    /// be read), rewritten to name the record that does.
    public var ownerEntriesRepointed = 0
    /// Owner entries deleted: no record holds their token, or malformed.
    public var ownerEntriesRemoved = 0
    /// Owner entries a sweep left for its owner cleanup (`OwnerCleanup`),
    /// deleted here ahead of it: not damage, so not counted in `fixes`.
    public var staleOwnerEntriesCleared = 0
    public var deviceActivityEntriesAdded = 0
    /// Device-activity entries deleted: no activity token, or malformed.
    public var deviceActivityEntriesRemoved = 0
    /// Device values whose `activityCount` was not the number of activity tokens they hold.
    public var activityCountsFixed = 0
    /// Push, push-to-start and activity tokens removed because their device record is gone.
    public var orphanTokensRemoved = 0
    /// Tokens held by two records at once (the one-owner rule broken):
    /// removed from the holder updated earlier.
    public var duplicateTokensRemoved = 0
    /// Records left as they are because their key or value cannot be read:
    /// nothing derived can rebuild them, and `check` still reports them.
    public var unreadableRecords = 0
    /// The first fixes, one line each.
    public var lines: [String] = []
    /// Fixes (and unreadable records) past the line limit.
    public var linesLeftOut = 0

    public init() {}

    /// Every fix made (not counting unreadable records, which are left alone).
    public var fixes: Int {
        expiryEntriesAdded + expiryEntriesRemoved + ownerEntriesAdded + ownerEntriesRepointed + ownerEntriesRemoved
            + deviceActivityEntriesAdded + deviceActivityEntriesRemoved + activityCountsFixed + orphanTokensRemoved
            + duplicateTokensRemoved
    }

    /// One line with every count that is not zero.
    public var summary: String {
        let counts = [
            ("expiry entries added", expiryEntriesAdded), ("expiry entries removed", expiryEntriesRemoved),
            ("owner entries added", ownerEntriesAdded), ("owner entries repointed", ownerEntriesRepointed),
            ("owner entries removed", ownerEntriesRemoved),
            ("device-activity entries added", deviceActivityEntriesAdded),
            ("device-activity entries removed", deviceActivityEntriesRemoved),
            ("activity counts fixed", activityCountsFixed), ("orphan tokens removed", orphanTokensRemoved),
            ("duplicate tokens removed", duplicateTokensRemoved),
        ].filter { $0.1 != 0 }.map { "\($0.0) \($0.1)" }
        var text = fixes == 0 ? "repair: nothing to fix" : "repair: \(fixes) fix(es): " + counts.joined(separator: ", ")
        if unreadableRecords > 0 { text += "; \(unreadableRecords) unreadable record(s) left alone" }
        if staleOwnerEntriesCleared > 0 { text += "; \(staleOwnerEntriesCleared) owner entries a sweep left cleared" }
        return text
    }

    mutating func add(_ other: RepairReport, lineLimit: Int) {
        expiryEntriesAdded += other.expiryEntriesAdded
        expiryEntriesRemoved += other.expiryEntriesRemoved
        ownerEntriesAdded += other.ownerEntriesAdded
        ownerEntriesRepointed += other.ownerEntriesRepointed
        ownerEntriesRemoved += other.ownerEntriesRemoved
        staleOwnerEntriesCleared += other.staleOwnerEntriesCleared
        deviceActivityEntriesAdded += other.deviceActivityEntriesAdded
        deviceActivityEntriesRemoved += other.deviceActivityEntriesRemoved
        activityCountsFixed += other.activityCountsFixed
        orphanTokensRemoved += other.orphanTokensRemoved
        duplicateTokensRemoved += other.duplicateTokensRemoved
        unreadableRecords += other.unreadableRecords
        for line in other.lines { note(line, lineLimit: lineLimit) }
        linesLeftOut += other.linesLeftOut
    }

    mutating func note(_ line: String, lineLimit: Int) {
        if lines.count < lineLimit { lines.append(line) } else { linesLeftOut += 1 }
    }
}

/// `registryd check --repair`: rebuilds every index from the records, in
/// bounded steps like the sweep's (`SweepPlan`).
///
/// The records are the truth; indexes are derived. The repair walks the
/// records first (activity tokens, push tokens, push-to-start tokens,
/// devices, tombstones) and puts back or corrects every index entry each
/// one needs, then walks each index (device activities, token owners,
/// expiry) and deletes the entries no record backs.
///
/// Each step is one command of the group-commit writer: it reads up to
/// `batchSize` keys from where the last step stopped and handles them for
/// at most `stepBudget`, so the writes queued behind it (this process's, or,
/// since LMDB serialises writers, another process's) wait a few
/// milliseconds at most. A step decides only from what it reads in its own
/// transaction, never from an earlier step: the server keeps every index in
/// step with its record in one transaction, so whatever it wrote between
/// two steps is consistent, and a step that reads it finds nothing to fix.
/// A record written behind the walk is never visited; one written ahead of
/// it is visited and already right; an index entry the server just wrote
/// agrees with its record and stays.
struct IndexRepair: Sendable {
    let schema: Schema
    let batchSize: Int
    let stepBudget: Duration
    let lineLimit: Int
    /// The owner keys logged for `OwnerCleanup` when the repair started.
    var pendingCleanup: Set<[UInt8]> = []

    init(schema: Schema, batchSize: Int, stepBudget: Duration, lineLimit: Int) {
        self.schema = schema
        self.batchSize = max(1, batchSize)
        self.stepBudget = stepBudget
        self.lineLimit = max(0, lineLimit)
    }

    /// The walks, in order. Activity tokens come before devices, so that a
    /// device's count is taken after its device-activity entries were put
    /// back; records come before indexes, so that an index entry is deleted
    /// only once every record has had its own entry put back.
    enum Walk: CaseIterable, Sendable {
        case activityTokens, pushTokens, pushToStartTokens, devices, tombstones, history
        case deviceActivities, tokenOwners, expiry
    }

    func database(_ walk: Walk) -> Database {
        switch walk {
        case .activityTokens: schema.activityTokens
        case .pushTokens: schema.pushTokens
        case .pushToStartTokens: schema.pushToStart
        case .devices: schema.devices
        case .tombstones: schema.tombstones
        case .history: schema.history
        case .deviceActivities: schema.deviceActivities
        case .tokenOwners: schema.tokenOwners
        case .expiry: schema.expiry
        }
    }

    /// One bounded step of `walk` from `start` (the first key when nil).
    /// Returns what it fixed, how many entries it visited and where the
    /// next step starts (`nil` when the walk is done).
    func step(_ walk: Walk, _ writer: RecordWriter, from start: [UInt8]?) throws
        -> (report: RepairReport, visited: Int, resume: [UInt8]?) {
        let deadline = ContinuousClock.now + stepBudget
        var keys: [[UInt8]] = []
        var resume: [UInt8]?
        // Keys only: each visit re-reads its value, since an earlier visit
        // of this step may have changed it (a duplicate token removed).
        try writer.txn.scan(database(walk), from: start) { key, _ in
            if keys.count == batchSize {
                resume = key
                return false
            }
            keys.append(key)
            return true
        }
        var fixer = Fixer(writer: writer, lineLimit: lineLimit, pendingCleanup: pendingCleanup)
        for (index, key) in keys.enumerated() {
            if index > 0, ContinuousClock.now >= deadline { return (fixer.report, index, key) }
            switch walk {
            case .activityTokens: try fixer.activityToken(key)
            case .pushTokens: try fixer.deviceToken(.push, key)
            case .pushToStartTokens: try fixer.deviceToken(.pushToStart, key)
            case .devices: try fixer.device(key)
            case .tombstones: try fixer.tombstone(key)
            case .history: try fixer.historyEvent(key)
            case .deviceActivities: try fixer.deviceActivity(key)
            case .tokenOwners: try fixer.tokenOwner(key)
            case .expiry: try fixer.expiry(key)
            }
        }
        return (fixer.report, keys.count, resume)
    }
}

/// A stored value as the repair sees it: an unreadable record is left
/// alone, and so are the index entries that name it.
private enum Stored<Value> {
    case absent
    case unreadable
    case value(Value)
}

/// The fixes of one step, each made from what it reads in the step's transaction.
private struct Fixer {
    let writer: RecordWriter
    let lineLimit: Int
    let pendingCleanup: Set<[UInt8]>
    var report = RepairReport()

    var txn: WriteTransaction { writer.txn }
    var schema: Schema { writer.schema }
    var read: RecordReader { writer.read }
    var vault: TokenVault { writer.vault }

    /// Decodes the value stored under `key` in `kind`'s database (its slot).
    private func tokenDecoder(_ kind: TokenKind, _ key: [UInt8]) -> ([UInt8]) throws -> TokenValue {
        { [vault] bytes in try TokenValue(decoding: bytes, in: TokenSlot(kind, key: key), vault) }
    }

    private mutating func note(_ line: String) { report.note(line, lineLimit: lineLimit) }

    private func describe(_ key: [UInt8], deviceActivity: Bool = false) -> String {
        read.describe(key, deviceActivity: deviceActivity)
    }

    /// A key no LMDB database can hold (empty, or past 511 bytes) is absent.
    private func load<Value>(_ key: [UInt8], in db: Database,
                             _ decode: ([UInt8]) throws -> Value) throws -> Stored<Value> {
        guard !key.isEmpty, key.count <= 511, let bytes = try txn.get(key, in: db) else { return .absent }
        guard let value = try? decode(bytes) else { return .unreadable }
        return .value(value)
    }

    private func exists(_ key: [UInt8], in db: Database) throws -> Bool {
        guard !key.isEmpty, key.count <= 511 else { return false }
        return try txn.get(key, in: db) != nil
    }

    private func kindName(_ kind: TokenKind) -> String {
        switch kind {
        case .push: "push token"
        case .pushToStart: "push-to-start token"
        case .activity: "activity token"
        }
    }

    private func kindName(_ kind: ExpiryKey.Kind) -> String {
        switch kind {
        case .device: "device"
        case .activityToken: "activity token"
        case .tombstone: "tombstone"
        case .history: "history event"
        }
    }

    private mutating func unreadable(_ what: String, _ key: [UInt8]) {
        report.unreadableRecords += 1
        note("left unreadable \(what) \(describe(key)) alone")
    }

    // MARK: Records

    /// An activity token: removed when its device is gone, else its
    /// device-activity, expiry and owner entries put back.
    mutating func activityToken(_ key: [UInt8]) throws {
        guard let (activity, id) = StoreKey.activityTokenParts(key) else { return unreadable("activity token key", key) }
        let token: TokenValue
        switch try load(key, in: schema.activityTokens, tokenDecoder(.activity, key)) {
        case .absent: return
        case .unreadable: return unreadable("activity token", key)
        case .value(let value): token = value
        }
        if try !exists(id.key, in: schema.devices) {
            guard try attempt("activity token", key, { try $0.removeActivityToken(activity, id, reason: .deleted) }) else { return }
            report.orphanTokensRemoved += 1
            return note("removed activity token \(describe(key)): its device is gone")
        }
        let deviceActivity = StoreKey.deviceActivity(id, activity)
        if try !exists(deviceActivity, in: schema.deviceActivities) {
            try txn.put([], for: deviceActivity, in: schema.deviceActivities)
            report.deviceActivityEntriesAdded += 1
            note("added device-activity entry for activity token \(describe(key))")
        }
        try ensureExpiry(.activityToken, key, at: token.updatedAt)
        try ensureOwner(.activity, token, heldAt: key, TokenHolder(id: id, activityId: activity))
    }

    /// A push or push-to-start token: removed when its device is gone, else
    /// its owner entry put back.
    mutating func deviceToken(_ kind: TokenKind, _ key: [UInt8]) throws {
        guard let id = StoreKey.recordID(key) else { return unreadable("\(kindName(kind)) key", key) }
        let token: TokenValue
        switch try load(key, in: schema.database(kind), tokenDecoder(kind, key)) {
        case .absent: return
        case .unreadable: return unreadable(kindName(kind), key)
        case .value(let value): token = value
        }
        if try !exists(key, in: schema.devices) {
            guard try attempt(kindName(kind), key, { try $0.removeToken(kind, id, reason: .deleted) }) else { return }
            report.orphanTokensRemoved += 1
            return note("removed \(kindName(kind)) of \(describe(key)): its device is gone")
        }
        try ensureOwner(kind, token, heldAt: key, TokenHolder(id: id, activityId: nil))
    }

    /// A device: its expiry entry put back, its `activityCount` set to the
    /// activity tokens it holds (device-activity entries whose token exists).
    mutating func device(_ key: [UInt8]) throws {
        guard let id = StoreKey.recordID(key) else { return unreadable("device key", key) }
        var value: DeviceValue
        switch try load(key, in: schema.devices, DeviceValue.init(decoding:)) {
        case .absent: return
        case .unreadable: return unreadable("device", key)
        case .value(let device): value = device
        }
        try ensureExpiry(.device, key, at: value.lastSeenAt)
        var held = 0
        for activity in try read.activities(id)
        where try exists(StoreKey.activityToken(activity, id), in: schema.activityTokens) {
            held += 1
        }
        guard held != value.activityCount else { return }
        let stored = value.activityCount
        value.activityCount = held
        try txn.put(value.encoded(), for: key, in: schema.devices)
        report.activityCountsFixed += 1
        note("set activityCount of device \(describe(key)) to \(held) (it said \(stored))")
    }

    mutating func tombstone(_ key: [UInt8]) throws {
        guard StoreKey.recordID(key) != nil else { return unreadable("tombstone key", key) }
        switch try load(key, in: schema.tombstones, TombstoneValue.init(decoding:)) {
        case .absent: return
        case .unreadable: return unreadable("tombstone", key)
        case .value(let tombstone): try ensureExpiry(.tombstone, key, at: tombstone.deletedAt)
        }
    }

    /// A history event: its expiry entry put back.
    mutating func historyEvent(_ key: [UInt8]) throws {
        guard let clock = StoreKey.historyClock(key) else { return unreadable("history key", key) }
        switch try load(key, in: schema.history, HistoryValue.init(decoding:)) {
        case .absent: return
        case .unreadable: return unreadable("history event", key)
        case .value: try ensureExpiry(.history, key, at: clock.at)
        }
    }

    /// Runs a removal through the writer's own primitive (which keeps every
    /// index of the token in step) in a child transaction: one that meets an
    /// unreadable value on the way (an owner entry, a device) undoes its
    /// part, and the record is reported and left alone. False then.
    private mutating func attempt(_ what: String, _ key: [UInt8], _ remove: (RecordWriter) throws -> Void) throws -> Bool {
        do {
            try txn.nested { child in
                var quiet = RecordWriter(txn: child, schema: schema, vault: vault, apps: writer.apps, now: writer.now)
                quiet.restoring = true
                try remove(quiet)
            }
            return true
        } catch let error as StoredValueError {
            report.unreadableRecords += 1
            note("left \(what) \(describe(key)) alone: \(error)")
            return false
        }
    }

    private mutating func ensureExpiry(_ kind: ExpiryKey.Kind, _ key: [UInt8], at time: Timestamp) throws {
        let entry = ExpiryKey(at: time, kind: kind, recordKey: key).bytes
        guard try !exists(entry, in: schema.expiry) else { return }
        try txn.put([], for: entry, in: schema.expiry)
        report.expiryEntriesAdded += 1
        note("added expiry entry for \(kindName(kind)) \(describe(key))")
    }

    /// Makes the owner entry of `token` name this holder, unless another
    /// record holds the very same token: then the one-owner rule is broken,
    /// and the holder updated later keeps it (on a tie, the one the entry
    /// already names, so lookups do not change); the other loses that token
    /// only (unlike a registration's claim, which removes a push token's
    /// whole device: nothing here says which device is stale).
    private mutating func ensureOwner(_ kind: TokenKind, _ token: TokenValue, heldAt key: [UInt8],
                                      _ owner: TokenHolder) throws {
        let ownerKey = vault.ownerKey(token.token, kind)
        let what = "\(kindName(kind)) of \(describe(key))"
        guard let bytes = try txn.get(ownerKey, in: schema.tokenOwners) else {
            try txn.put(owner.encoded(), for: ownerKey, in: schema.tokenOwners)
            report.ownerEntriesAdded += 1
            return note("added owner entry for \(what)")
        }
        guard let named = try? TokenHolder(decoding: bytes) else {
            try txn.put(owner.encoded(), for: ownerKey, in: schema.tokenOwners)
            report.ownerEntriesRepointed += 1
            return note("replaced the unreadable owner entry for \(what)")
        }
        let namedKey = read.tokenKey(kind, named)
        if namedKey == key { return }
        if case .value(let other) = try load(namedKey, in: schema.database(kind), tokenDecoder(kind, namedKey)),
           other.token.hasSameBytes(as: token.token) {
            let thisWins = other.updatedAt < token.updatedAt
            let (loserKey, loser) = thisWins ? (namedKey, named) : (key, owner)
            let removed = try attempt(kindName(kind), loserKey) { writer in
                switch kind {
                case .push, .pushToStart: try writer.removeToken(kind, loser.id, reason: .deleted)
                case .activity: try writer.removeActivityToken(loser.activityId ?? "", loser.id, reason: .deleted)
                }
            }
            guard removed else { return }
            if thisWins { try txn.put(owner.encoded(), for: ownerKey, in: schema.tokenOwners) }
            report.duplicateTokensRemoved += 1
            let winnerKey = thisWins ? key : namedKey
            return note("\(kindName(kind)) held by both \(describe(key)) and \(describe(namedKey)): "
                        + "kept on \(describe(winnerKey)) (updated later), removed from \(describe(loserKey))")
        }
        try txn.put(owner.encoded(), for: ownerKey, in: schema.tokenOwners)
        report.ownerEntriesRepointed += 1
        note("repointed the owner entry for \(what): it named \(describe(namedKey)), which does not hold it")
    }

    // MARK: Indexes

    mutating func deviceActivity(_ key: [UInt8]) throws {
        guard try exists(key, in: schema.deviceActivities) else { return }
        guard let (id, activity) = StoreKey.deviceActivityParts(key) else {
            try txn.delete(key, in: schema.deviceActivities)
            report.deviceActivityEntriesRemoved += 1
            return note("removed a malformed device-activity entry")
        }
        guard try !exists(StoreKey.activityToken(activity, id), in: schema.activityTokens) else { return }
        try txn.delete(key, in: schema.deviceActivities)
        report.deviceActivityEntriesRemoved += 1
        note("removed device-activity entry \(describe(key, deviceActivity: true)): no activity token")
    }

    /// Deleted unless the holder it names holds its token (an unreadable
    /// holder keeps its entry).
    mutating func tokenOwner(_ key: [UInt8]) throws {
        guard let bytes = try txn.get(key, in: schema.tokenOwners) else { return }
        guard key.count == 33, let kind = TokenKind(rawValue: key[32]), let owner = try? TokenHolder(decoding: bytes) else {
            try txn.delete(key, in: schema.tokenOwners)
            report.ownerEntriesRemoved += 1
            return note("removed a malformed owner entry")
        }
        let holderKey = read.tokenKey(kind, owner)
        switch try load(holderKey, in: schema.database(kind), tokenDecoder(kind, holderKey)) {
        case .unreadable: return
        case .value(let held) where vault.ownerKey(held.token, kind) == key: return
        case .absent, .value:
            try txn.delete(key, in: schema.tokenOwners)
            if pendingCleanup.contains(key) {
                report.staleOwnerEntriesCleared += 1
                return
            }
            report.ownerEntriesRemoved += 1
            note("removed the \(kindName(kind)) owner entry naming \(describe(holderKey)): it does not hold that token")
        }
    }

    /// Deleted unless its record exists with its time in the entry's hour
    /// bucket (an unreadable record keeps its entry).
    mutating func expiry(_ key: [UInt8]) throws {
        guard try exists(key, in: schema.expiry) else { return }
        guard let entry = ExpiryKey(bytes: key) else {
            try txn.delete(key, in: schema.expiry)
            report.expiryEntriesRemoved += 1
            return note("removed a malformed expiry entry")
        }
        let time: Stored<Timestamp>
        switch entry.kind {
        case .device:
            time = try timestamp(load(entry.recordKey, in: schema.devices, DeviceValue.init(decoding:)), \.lastSeenAt)
        case .activityToken:
            time = try timestamp(load(entry.recordKey, in: schema.activityTokens, tokenDecoder(.activity, entry.recordKey)), \.updatedAt)
        case .tombstone:
            time = try timestamp(load(entry.recordKey, in: schema.tombstones, TombstoneValue.init(decoding:)), \.deletedAt)
        case .history:
            time = try timestamp(load(entry.recordKey, in: schema.history, HistoryValue.init(decoding:)), \.at)
        }
        let why: String
        switch time {
        case .unreadable: return
        case .value(let at) where ExpiryKey.bucket(of: at) == entry.bucket: return
        case .value(let at): why = "the record is in hour bucket \(ExpiryKey.bucket(of: at)), not \(entry.bucket)"
        case .absent: why = "no record"
        }
        try txn.delete(key, in: schema.expiry)
        report.expiryEntriesRemoved += 1
        note("removed expiry entry for \(kindName(entry.kind)) \(describe(entry.recordKey)): \(why)")
    }

    private func timestamp<Value>(_ stored: Stored<Value>, _ time: KeyPath<Value, Timestamp>) -> Stored<Timestamp> {
        switch stored {
        case .absent: .absent
        case .unreadable: .unreadable
        case .value(let value): .value(value[keyPath: time])
        }
    }
}
