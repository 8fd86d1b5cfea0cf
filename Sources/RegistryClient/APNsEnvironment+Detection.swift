import Foundation

extension APNsEnvironment {
    /// The environment the build's signature gives its tokens.
    ///
    /// A simulator uses the sandbox. A device build carrying a provisioning
    /// profile (development, ad-hoc, enterprise) uses what its entitlements
    /// say in `aps-environment`: development profiles the sandbox, ad-hoc
    /// and enterprise ones production. An App Store or TestFlight build
    /// carries no profile and uses production. Pass `Bundle.main.bundleURL`,
    /// and on iOS `isSimulator` from `#if targetEnvironment(simulator)`.
    ///
    /// Throws when a profile is there but cannot be read or grants no push
    /// entitlement: guessing would register tokens APNs then refuses.
    public static func detect(isSimulator: Bool, bundleURL: URL) throws(ProvisioningProfileError) -> APNsEnvironment {
        if isSimulator { return .sandbox }
        let candidates = [bundleURL.appendingPathComponent("embedded.mobileprovision"),
                          bundleURL.appendingPathComponent("Contents/embedded.provisionprofile")]
        guard let url = candidates.first(where: { FileManager.default.fileExists(atPath: $0.path) }) else {
            return .production
        }
        guard let data = try? Data(contentsOf: url) else { throw .unreadable(url.path) }
        return try ProvisioningProfile.environment(in: data)
    }
}

/// Why a provisioning profile gave no APNs environment.
public enum ProvisioningProfileError: Error, Equatable, Sendable, CustomStringConvertible {
    case unreadable(String)
    /// No XML property list inside the signed envelope.
    case noPropertyList
    case malformedPropertyList
    /// The profile's entitlements have no `aps-environment`: the App ID lacks
    /// the Push Notifications capability.
    case noPushEntitlement
    case unknownEnvironment(String)

    public var description: String {
        switch self {
        case .unreadable(let path): "RegistryClient: cannot read the provisioning profile at \(path)"
        case .noPropertyList: "RegistryClient: the provisioning profile holds no XML property list"
        case .malformedPropertyList: "RegistryClient: the provisioning profile's property list is malformed"
        case .noPushEntitlement:
            "RegistryClient: the provisioning profile has no aps-environment entitlement (enable Push Notifications for the App ID)"
        case .unknownEnvironment(let value):
            "RegistryClient: the provisioning profile's aps-environment is '\(value)', expected development or production"
        }
    }
}

/// Reads `aps-environment` from a provisioning profile.
///
/// A profile is a CMS (PKCS#7) signed-data envelope whose content is an XML
/// plist, stored whole and unencrypted. Verifying the signature would need
/// the Security framework and proves nothing the installed app does not
/// already prove, so the plist is taken from between its `<?xml` and
/// `</plist>` bytes, which works the same on Linux for the tests.
enum ProvisioningProfile {
    static func environment(in profile: Data) throws(ProvisioningProfileError) -> APNsEnvironment {
        guard let start = profile.range(of: Data("<?xml".utf8)),
              let end = profile.range(of: Data("</plist>".utf8), in: start.upperBound..<profile.endIndex) else {
            throw .noPropertyList
        }
        let plist = profile.subdata(in: start.lowerBound..<end.upperBound)
        guard let object = try? PropertyListSerialization.propertyList(from: plist, format: nil),
              let root = object as? [String: Any] else { throw .malformedPropertyList }
        let entitlements = root["Entitlements"] as? [String: Any] ?? [:]
        guard let value = (entitlements["aps-environment"] ?? entitlements["com.apple.developer.aps-environment"])
            as? String else { throw .noPushEntitlement }
        switch value {
        case "development": return .sandbox
        case "production": return .production
        default: throw .unknownEnvironment(value)
        }
    }
}
