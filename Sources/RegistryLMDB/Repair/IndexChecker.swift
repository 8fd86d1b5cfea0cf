import RegistryCore
import LMDB

/// `registryd check`: walks every database once and checks that each index
/// agrees with the records it indexes, in both directions. O(store); meant
/// for operators, not the request path.
struct IndexChecker {
    let read: RecordReader
    let schema: Schema
    let limit: Int
    /// Called with the number of entries visited so far, every
    /// `progressInterval` entries and once at the end.
    let progress: ((_ entriesDone: Int) -> Void)?
    static let progressInterval = 1_000
    private(set) var problems: [String] = []
    private var visited = 0

    init(read: RecordReader, schema: Schema, limit: Int, progress: ((_ entriesDone: Int) -> Void)? = nil) {
        self.read = read
        self.schema = schema
        self.limit = limit
        self.progress = progress
    }

    private mutating func tick() {
        visited += 1
        if visited % Self.progressInterval == 0 { progress?(visited) }
    }

    private mutating func problem(_ text: String) {
        if problems.count < limit { problems.append(text) }
    }

    private func describe(_ key: [UInt8], deviceActivity: Bool = false) -> String {
        read.describe(key, deviceActivity: deviceActivity)
    }

    mutating func run() throws {
        var expiry = Set<[UInt8]>()
        try read.txn.scan(schema.expiry) { key, _ in
            expiry.insert(key)
            tick()
            return true
        }
        var referenced = Set<[UInt8]>()
        let pendingCleanup = try OwnerCleanup.pending(read.txn, schema)

        try eachEntry(schema.devices) { key, value, this in
            guard let device = try? DeviceValue(decoding: value) else { this.problem("device \(this.describe(key)): unreadable value"); return }
            let entry = ExpiryKey(at: device.lastSeenAt, kind: .device, recordKey: key).bytes
            if !expiry.contains(entry) { this.problem("device \(this.describe(key)): no expiry entry") }
            referenced.insert(entry)
            if let id = StoreKey.recordID(key) {
                let held = try this.read.activities(id).count
                if held != device.activityCount {
                    this.problem("device \(this.describe(key)): activityCount \(device.activityCount) but \(held) activity tokens")
                }
            }
        }
        for kind in [TokenKind.push, .pushToStart] {
            try eachEntry(schema.database(kind)) { key, value, this in
                guard let id = StoreKey.recordID(key) else { this.problem("\(kind) token: malformed key"); return }
                if try !this.hasDevice(id) { this.problem("\(kind) token \(this.describe(key)): no device") }
                guard let token = this.open(value, kind, key) else { return }
                try this.checkOwner(token, kind, heldAt: key, "\(kind) token")
            }
        }
        try eachEntry(schema.activityTokens) { key, value, this in
            guard let (activity, id) = StoreKey.activityTokenParts(key) else { this.problem("activity token: malformed key"); return }
            if try !this.hasDevice(id) { this.problem("activity token \(this.describe(key)): no device") }
            if try this.read.txn.get(StoreKey.deviceActivity(id, activity), in: this.schema.deviceActivities) == nil {
                this.problem("activity token \(this.describe(key)): no device-activity entry")
            }
            guard let token = this.open(value, .activity, key) else { return }
            let entry = ExpiryKey(at: token.updatedAt, kind: .activityToken, recordKey: key).bytes
            if !expiry.contains(entry) { this.problem("activity token \(this.describe(key)): no expiry entry") }
            referenced.insert(entry)
            try this.checkOwner(token, .activity, heldAt: key, "activity token")
        }
        try eachEntry(schema.deviceActivities) { key, _, this in
            guard let (id, activity) = StoreKey.deviceActivityParts(key) else { this.problem("device-activity: malformed key"); return }
            if try this.read.txn.get(StoreKey.activityToken(activity, id), in: this.schema.activityTokens) == nil {
                this.problem("device-activity \(this.describe(key, deviceActivity: true)): no activity token")
            }
        }
        try eachEntry(schema.tokenOwners) { key, value, this in
            guard key.count == 33, let kind = TokenKind(rawValue: key[32]), let owner = try? TokenHolder(decoding: value) else {
                this.problem("token owner: malformed entry"); return
            }
            guard let held = try? this.read.token(kind, this.read.tokenKey(kind, owner)),
                  this.read.vault.ownerKey(held.token, kind) == key else {
                // One the sweep left, waiting for `OwnerCleanup`: no reader takes it for an owner.
                if pendingCleanup.contains(key) { return }
                this.problem("token owner entry for \(this.describe(this.read.tokenKey(kind, owner))): holder does not hold it"); return
            }
        }
        try eachEntry(schema.tombstones) { key, value, this in
            guard let tombstone = try? TombstoneValue(decoding: value) else { this.problem("tombstone \(this.describe(key)): unreadable"); return }
            let entry = ExpiryKey(at: tombstone.deletedAt, kind: .tombstone, recordKey: key).bytes
            if !expiry.contains(entry) { this.problem("tombstone \(this.describe(key)): no expiry entry") }
            referenced.insert(entry)
        }
        try eachEntry(schema.history) { key, value, this in
            guard let clock = StoreKey.historyClock(key), (try? HistoryValue(decoding: value)) != nil else {
                this.problem("history event \(this.describe(Array(key.dropLast(12)))): unreadable"); return
            }
            let entry = ExpiryKey(at: clock.at, kind: .history, recordKey: key).bytes
            if !expiry.contains(entry) { this.problem("history event of \(this.describe(Array(key.dropLast(12)))): no expiry entry") }
            referenced.insert(entry)
        }
        for entry in expiry.subtracting(referenced) {
            problem("expiry entry \(ExpiryKey(bytes: entry).map { "\($0.kind) \(describe($0.recordKey))" } ?? "<malformed>"): no record")
        }
        progress?(visited)
    }

    /// Whether the device record exists, readable or not: an unreadable one
    /// is reported once, by the devices walk, instead of making every token
    /// of it throw the whole check.
    private func hasDevice(_ id: RecordID) throws -> Bool {
        try read.txn.get(id.key, in: schema.devices) != nil
    }

    /// The stored token opened with the key file's keys; a value that does
    /// not open (another key, tampering, damage) is a problem.
    private mutating func open(_ value: [UInt8], _ kind: TokenKind, _ key: [UInt8]) -> TokenValue? {
        do {
            return try TokenValue(decoding: value, in: TokenSlot(kind, key: key), read.vault)
        } catch {
            problem("\(kind) token \(describe(key)): sealed value does not open: \(error)")
            return nil
        }
    }

    /// The token's owner entry must name this very record. One naming
    /// another record that holds the same token means two records hold it:
    /// the one-owner rule is broken (lookups find only one of them).
    private mutating func checkOwner(_ token: TokenValue, _ kind: TokenKind, heldAt key: [UInt8], _ what: String) throws {
        guard let owner = try read.owner(of: token.token, kind) else { return problem("\(what) \(describe(key)): no owner entry") }
        let named = read.tokenKey(kind, owner)
        if named != key { problem("\(what) \(describe(key)): the same token is also held by \(describe(named))") }
    }

    private mutating func eachEntry(_ db: Database,
                                    _ body: ([UInt8], [UInt8], inout IndexChecker) throws -> Void) throws {
        var this = self
        try read.txn.scan(db) { key, value in
            this.tick()
            try body(key, value, &this)
            return true
        }
        self = this
    }
}
