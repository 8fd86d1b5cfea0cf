/// What can go wrong in the registry, in its users' terms. The HTTP layer
/// maps each case to the contract's status and code in one place.
public enum RegistryError: Error, Hashable, Sendable {
    /// A field failed a domain rule the HTTP layer could not check alone
    /// (e.g. a push token that does not fit the stored platform). `field`
    /// is the JSON name or query parameter; `message` follows it ("must be
    /// hexadecimal"), so the HTTP message reads "pushToken must be hexadecimal".
    case invalidField(field: String, message: String)
    /// The request's `sequence` is older than the stored one, or not newer
    /// than a sign-out's tombstone.
    case staleWrite
    /// The storage is full (map cannot grow, or the disk is full): retry later.
    case storageFull
    /// The store does not take writes: shutting down, or a commit failed and
    /// nothing more is acknowledged (the process should exit).
    case unavailable(reason: String)
}

package extension RegistryError {
    /// A caller's write named an app the operator did not declare (`DeclaredApps`).
    static let undeclaredApp = RegistryError.invalidField(field: "appId", message: "is not a declared app")
}
