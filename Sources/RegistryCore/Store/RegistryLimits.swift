/// The rules' limits (docs/security.md "Limits one caller cannot exceed"),
/// one value that every engine's configuration carries and `registryd` sets
/// from its flags, so a default is written once.
public struct RegistryLimits: Sendable, Equatable {
    /// Devices one user keeps per app; one more evicts the least recently seen.
    public var maxDevicesPerUser = 20
    /// Activity tokens one device may hold; one more evicts its least recently refreshed.
    public var maxActivitiesPerDevice = 32
    /// A device not seen for this long is swept, and so is a tombstone this old.
    public var deviceTTL: Duration = .seconds(90 * 86_400)
    /// An activity token not refreshed for this long is swept.
    public var activityTTL: Duration = .seconds(90 * 86_400)
    /// The apps a caller's write may name (`DeclaredApps`).
    public var apps: DeclaredApps = .defaultOnly

    public init() {}

    /// Tombstones one user may hold per app: twice the device cap, so a
    /// user who signs every device out twice keeps every tombstone.
    public var maxTombstonesPerUser: Int { 2 * maxDevicesPerUser }
}
