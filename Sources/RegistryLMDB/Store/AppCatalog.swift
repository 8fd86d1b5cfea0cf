import RegistryCore
import LMDB
import Synchronization

/// App families (API v1.1, docs/api.md): record keys carry a short code for the app
/// ("0", "1", …) instead of its `appId`, because an `appId` is up to 155
/// bytes and (activity, user, app, device) with the full ids would pass
/// LMDB's 511-byte key limit. The `apps` database maps each `appId` to its
/// code; codes are assigned on an app's first write and never change or go
/// away, so a cached mapping is never stale. Only a declared app
/// (`DeclaredApps`) is given a code by a caller's write; a restoring write
/// (import, repair, migration) gives one to the app its records name.
///
/// The cache is filled only from read transactions (committed data): a
/// code assigned in a write that is then rolled back never reaches it.
final class AppCatalog: Sendable {
    private struct Maps {
        var codes: [[UInt8]: String] = [:]
        var names: [String: String] = [:]
    }

    private let apps: Database
    /// The apps a caller's write may name.
    let declared: DeclaredApps
    private let cache = Mutex(Maps())

    init(apps: Database, declared: DeclaredApps = .defaultOnly) {
        self.apps = apps
        self.declared = declared
    }

    /// The code of `appId`, or `nil` when no record of that app was ever written.
    func existingCode(_ appId: String, _ txn: ReadTransaction) throws -> String? {
        let name = Array(appId.utf8)
        if let code = cache.withLock({ $0.codes[name] }) { return code }
        guard let stored = try txn.get(name, in: apps) else { return nil }
        let code = String(decoding: stored, as: UTF8.self)
        if !(txn is WriteTransaction) { remember(name, appId, code) }
        return code
    }

    /// The code of `appId`, assigning the next one when the app has none
    /// yet. A caller's write (`restoring` false) may name only a declared
    /// app: any other is refused (a 400 naming `appId`), stored or not.
    func code(_ appId: String, _ txn: WriteTransaction, restoring: Bool) throws -> String {
        guard restoring || declared.contains(appId) else { throw RegistryError.undeclaredApp }
        if let code = try existingCode(appId, txn) { return code }
        let code = String(try txn.count(in: apps))
        try txn.put(Array(code.utf8), for: Array(appId.utf8), in: apps)
        return code
    }

    /// The `appId` a code stands for.
    func appId(_ code: String, _ txn: ReadTransaction) throws -> String {
        if let name = cache.withLock({ $0.names[code] }) { return name }
        var found: (name: [UInt8], appId: String)?
        try txn.scan(apps) { key, value in
            guard String(decoding: value, as: UTF8.self) == code else { return true }
            found = (key, String(decoding: key, as: UTF8.self))
            return false
        }
        guard let found else { throw StoredValueError(what: "app code \(code)", reason: "not in the apps database") }
        if !(txn is WriteTransaction) { remember(found.name, found.appId, code) }
        return found.appId
    }

    /// Every app that has a code, in byte order.
    func all(_ txn: ReadTransaction) throws -> [String] {
        var ids: [String] = []
        try txn.scan(apps) { key, _ in
            ids.append(String(decoding: key, as: UTF8.self))
            return true
        }
        return ids
    }

    /// The app ids one read names, each looked up once: a user's devices or
    /// a fan-out page are of one app or a few, and `appId(_:_:)` takes a lock.
    struct Names {
        let catalog: AppCatalog
        private var known: [String: String] = [:]

        init(_ catalog: AppCatalog) { self.catalog = catalog }

        mutating func appId(_ code: String, _ txn: ReadTransaction) throws -> String {
            if let appId = known[code] { return appId }
            let appId = try catalog.appId(code, txn)
            known[code] = appId
            return appId
        }
    }

    private func remember(_ name: [UInt8], _ appId: String, _ code: String) {
        cache.withLock {
            $0.codes[name] = code
            $0.names[code] = appId
        }
    }
}
