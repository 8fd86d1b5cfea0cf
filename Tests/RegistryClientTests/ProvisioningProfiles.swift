import Foundation

/// Sample provisioning profiles as Xcode and the developer portal make them:
/// an XML plist signed into a CMS (PKCS#7) envelope, here by `openssl cms`
/// with a throwaway certificate.
enum ProvisioningProfiles {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// A development profile (`aps-environment` development, a device list).
    static let development = plist(aps: "development", extra: "<key>ProvisionedDevices</key><array><string>00008101-000A</string></array>")
    /// An ad-hoc profile: production APNs, a device list.
    static let adHoc = plist(aps: "production", extra: "<key>ProvisionedDevices</key><array><string>00008101-000A</string></array>")
    /// An enterprise (in-house) profile: production APNs, every device.
    static let enterprise = plist(aps: "production", extra: "<key>ProvisionsAllDevices</key><true/>")
    /// A profile for an app without the push entitlement.
    static let withoutPush = plist(aps: nil, extra: "")

    static func plist(aps: String?, extra: String) -> String {
        let entitlement = aps.map { "<key>aps-environment</key><string>\($0)</string>" } ?? ""
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
                <key>Name</key><string>Sample</string>
                <key>Entitlements</key>
                <dict>
                    <key>application-identifier</key><string>TEAM.com.example.app</string>
                    \(entitlement)
                </dict>
                \(extra)
            </dict>
            </plist>
            """
    }

    /// `plist` signed with `openssl cms -sign -nodetach`, as DER.
    static func signed(_ plist: String) throws -> Data {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("profile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = { (name: String) in directory.appendingPathComponent(name).path }
        try Data(plist.utf8).write(to: URL(fileURLWithPath: path("profile.plist")))
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", path("key.pem"), "-out", path("cert.pem"), "-subj", "/CN=iPhone Distribution: Sample",
                     "-days", "1"])
        try openssl(["cms", "-sign", "-binary", "-nodetach", "-in", path("profile.plist"), "-signer", path("cert.pem"),
                     "-inkey", path("key.pem"), "-outform", "DER", "-out", path("embedded.mobileprovision")])
        return try Data(contentsOf: URL(fileURLWithPath: path("embedded.mobileprovision")))
    }

    private static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "openssl \(arguments[0]): \(String(decoding: message, as: UTF8.self))")
        }
    }

    /// A temporary app bundle holding `profile` as `embedded.mobileprovision`
    /// (none when nil).
    static func bundle(with profile: Data?) throws -> URL {
        let bundle = FileManager.default.temporaryDirectory.appendingPathComponent("bundle-\(UUID().uuidString).app")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        if let profile { try profile.write(to: bundle.appendingPathComponent("embedded.mobileprovision")) }
        return bundle
    }
}
