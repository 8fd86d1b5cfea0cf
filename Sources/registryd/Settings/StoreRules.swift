import Foundation
import RegistryCore

/// The registry's limits as the flags set them (`--device-ttl`,
/// `--activity-ttl`, `--max-devices-per-user`, `--max-activities-per-device`,
/// `--apps`): `RegistryLimits`' defaults, each overridden by its flag,
/// which every engine's configuration carries as it is.
enum StoreRules {
    static func limits(_ arguments: Arguments) throws(Arguments.Failure) -> RegistryLimits {
        var limits = RegistryLimits()
        if let deviceTTL = try Settings.duration(arguments, "device-ttl") { limits.deviceTTL = deviceTTL }
        if let activityTTL = try Settings.duration(arguments, "activity-ttl") { limits.activityTTL = activityTTL }
        if let n = try count(arguments, "max-devices-per-user", max: 10_000) { limits.maxDevicesPerUser = n }
        if let n = try count(arguments, "max-activities-per-device", max: 1_000) { limits.maxActivitiesPerDevice = n }
        if let failure = arguments.removedVariable("max-apps") { throw failure }
        if let apps = try apps(arguments) { limits.apps = apps }
        return limits
    }

    /// `--apps ID[,ID…]`: each an `appId`; `default` is always added.
    private static func apps(_ arguments: Arguments) throws(Arguments.Failure) -> DeclaredApps? {
        guard let (value, source) = arguments.value("apps") else { return nil }
        let ids = value.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        do {
            return try DeclaredApps(ids)
        } catch {
            throw Arguments.Failure(description: "\(source): \(error)")
        }
    }

    private static func count(_ arguments: Arguments, _ flag: String, max: Int) throws(Arguments.Failure) -> Int? {
        guard let (value, source) = arguments.value(flag) else { return nil }
        guard let n = ValueParsing.positiveInt(value, max: max) else {
            throw Arguments.Failure(description: "\(source) must be a whole number from 1 to \(max)")
        }
        return n
    }
}
