import Foundation

/// A sign-out whose delete the server has not answered yet: everything the
/// delete needs, so it can be sent by a later launch with no session around.
///
/// `sequence` is stamped when the user signs out, above every register of
/// that session, and never changes: a retry or a replay that lands after the
/// same user signed in again is refused (409) instead of deleting the new
/// session's registration. It also names the sign-out.
public struct PendingSignOut: Codable, Sendable, Equatable {
    public var userId: String
    public var deviceId: String
    public var appId: String?
    public var sequence: UInt64
    /// The credential the session had when it ended (the last one its
    /// provider returned), or the one the first attempt obtained; nil when
    /// the session never produced one.
    public var credential: String?
    public var signedOutAt: Date

    public init(userId: String, deviceId: String, appId: String?, sequence: UInt64, credential: String?,
                signedOutAt: Date) {
        self.userId = userId
        self.deviceId = deviceId
        self.appId = appId
        self.sequence = sequence
        self.credential = credential
        self.signedOutAt = signedOutAt
    }
}

/// Where pending sign-outs are kept between launches.
///
/// `save` replaces the whole list and is called before `signedOut()`
/// returns, so a sign-out taken is a sign-out sent, even if the app is
/// killed the next moment. A failure to save is reported as an event; the
/// delete is still sent by this process.
public protocol SignOutStore: Sendable {
    func load() -> [PendingSignOut]
    func save(_ signOuts: [PendingSignOut]) throws
}

/// The default store: one JSON file, replaced atomically.
///
/// On Apple platforms the file is kept out of backups (a restore onto
/// another phone must not replay this phone's sign-outs) and readable only
/// after the first unlock, since it holds credentials.
public final class FileSignOutStore: SignOutStore, Sendable {
    public let url: URL

    public init(url: URL) { self.url = url }

    /// `Application Support/RegistryClient/pending-sign-outs.json` in the
    /// app's container.
    public static func applicationSupport() throws -> FileSignOutStore {
        let base = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask,
                                               appropriateFor: nil, create: true)
        return FileSignOutStore(url: base.appendingPathComponent("RegistryClient/pending-sign-outs.json"))
    }

    /// An unreadable file is treated as empty: the server's TTL settles
    /// what it held, and a corrupt file must not stop the app's launch.
    public func load() -> [PendingSignOut] {
        guard let data = try? Data(contentsOf: url) else { return [] }
        return (try? JSONDecoder().decode([PendingSignOut].self, from: data)) ?? []
    }

    public func save(_ signOuts: [PendingSignOut]) throws {
        if signOuts.isEmpty, !FileManager.default.fileExists(atPath: url.path) { return }
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let data = try JSONEncoder().encode(signOuts)
        #if canImport(Darwin)
        try data.write(to: url, options: [.atomic, .completeFileProtectionUntilFirstUserAuthentication])
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        var excluded = url
        try excluded.setResourceValues(values)
        #else
        try data.write(to: url, options: .atomic)
        #endif
    }
}

/// A store that lives as long as the object: for tests, or an app that keeps
/// pending sign-outs elsewhere (the keychain, say) and copies them.
public final class InMemorySignOutStore: SignOutStore, @unchecked Sendable {
    // @unchecked: `signOuts` is only touched under `lock`.
    private let lock = NSLock()
    private var signOuts: [PendingSignOut]

    public init(_ signOuts: [PendingSignOut] = []) { self.signOuts = signOuts }

    public func load() -> [PendingSignOut] {
        lock.lock()
        defer { lock.unlock() }
        return signOuts
    }

    public func save(_ signOuts: [PendingSignOut]) throws {
        lock.lock()
        defer { lock.unlock() }
        self.signOuts = signOuts
    }
}

/// How `signOut(timeout:)` ended.
public enum SignOutResult: Sendable, Equatable {
    /// The server deleted the registration (or already held a newer write).
    case delivered
    /// The delete cannot succeed (its credential was refused or missing, or
    /// the server refused the request); the server's TTL, or the push token's
    /// next owner, settles what it held.
    case gaveUp
    /// Not answered within the timeout; it stays queued and persisted.
    case pending
    /// No user was signed in.
    case notSignedIn
}
