import Foundation
@testable import RegistryClient
import Testing

/// The APNs environment from the build's entitlements, on profiles the tests
/// sign themselves.
@Suite struct APNsEnvironmentTests {
    private func detect(_ plist: String?, isSimulator: Bool = false) throws -> APNsEnvironment {
        let bundle = try ProvisioningProfiles.bundle(with: try plist.map(ProvisioningProfiles.signed))
        defer { try? FileManager.default.removeItem(at: bundle) }
        return try APNsEnvironment.detect(isSimulator: isSimulator, bundleURL: bundle)
    }

    @Test func developmentProfilesUseTheSandbox() throws {
        #expect(try detect(ProvisioningProfiles.development) == .sandbox)
    }

    @Test func adHocAndEnterpriseProfilesUseProduction() throws {
        #expect(try detect(ProvisioningProfiles.adHoc) == .production)
        #expect(try detect(ProvisioningProfiles.enterprise) == .production)
    }

    @Test func noProfileIsTheAppStoreAndASimulatorIsTheSandbox() throws {
        #expect(try detect(nil) == .production)
        #expect(try detect(nil, isSimulator: true) == .sandbox)
    }
}

/// What cannot be read is said, not guessed.
@Suite struct ProvisioningProfileErrorTests {
    @Test func aProfileWithoutThePushEntitlementOrAPlistIsAnError() throws {
        let withoutPush = try ProvisioningProfiles.signed(ProvisioningProfiles.withoutPush)
        #expect(throws: ProvisioningProfileError.noPushEntitlement) { try ProvisioningProfile.environment(in: withoutPush) }
        #expect(throws: ProvisioningProfileError.noPropertyList) { try ProvisioningProfile.environment(in: Data([0x30, 0x82, 0x01])) }
        let garbled = Data("<?xml version=\"1.0\"?><plist><dict><key>x</plist>".utf8)
        #expect(throws: ProvisioningProfileError.malformedPropertyList) { try ProvisioningProfile.environment(in: garbled) }
        let odd = Data(ProvisioningProfiles.plist(aps: "staging", extra: "").utf8)
        #expect(throws: ProvisioningProfileError.unknownEnvironment("staging")) { try ProvisioningProfile.environment(in: odd) }
        #expect(ProvisioningProfileError.noPushEntitlement.description.contains("enable Push Notifications"))
    }
}
