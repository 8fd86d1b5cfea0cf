/// The apps the operator declared (`--apps`, docs/api.md "Apps are declared
/// by the operator"): the only `appId`s a registration may name.
///
/// Callers never create apps: with caller-chosen ids one signed-in user
/// could fill any catalogue and multiply the per-(user, app) caps. A write
/// naming an undeclared app is refused (`invalidField("appId")`), a read or
/// delete naming one finds nothing and writes nothing. Records of an app no
/// longer declared stay readable by the sender reads, export and sweep.
/// Only restoring writes (import, repair, migration) take an undeclared app,
/// as the exported or stored records name it.
///
/// `default` is always declared, so a v1 client that names no app works
/// whatever the list. App ids are ASCII (`Identifier.checkAppId`), so
/// `String` equality here is byte equality.
public struct DeclaredApps: Sendable, Hashable, CustomStringConvertible {
    /// Every declared app, `default` included, in byte order.
    public let ids: [String]
    private let set: Set<String>

    /// `ids` plus `default`; each must pass `Identifier.checkAppId`.
    public init(_ ids: some Sequence<String> = []) throws(InvalidAppId) {
        var set: Set<String> = [Identifier.defaultAppId]
        for id in ids {
            if let problem = Identifier.checkAppId(id) { throw InvalidAppId(appId: id, problem: problem) }
            set.insert(id)
        }
        self.set = set
        self.ids = set.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// Only `default`.
    public static let defaultOnly = try! DeclaredApps()

    public func contains(_ appId: String) -> Bool { set.contains(appId) }

    public var description: String { ids.joined(separator: ",") }

    /// An id in the list that is not an `appId`.
    public struct InvalidAppId: Error, Hashable, Sendable, CustomStringConvertible {
        public let appId: String
        public let problem: Identifier.Problem

        public var description: String { "'\(appId)' \(problem.message) (an appId is 1-155 bytes of A-Z a-z 0-9 . -)" }
    }
}
