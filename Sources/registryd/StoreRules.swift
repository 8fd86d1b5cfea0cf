import Foundation
import Registry

/// The registry's rules as the flags set them (`--device-ttl`,
/// `--activity-ttl`, `--max-devices-per-user`, `--max-activities-per-device`,
/// `--apps`), applied to whichever backend's configuration `--store`
/// chose. A flag left unset keeps that configuration's own default, so a
/// default is written once, next to what it configures.
struct StoreRules {
    var deviceTTL: Duration?
    var activityTTL: Duration?
    var maxDevicesPerUser: Int?
    var maxActivitiesPerDevice: Int?
    var apps: DeclaredApps?

    init(_ arguments: Arguments) throws(Arguments.Failure) {
        deviceTTL = try Settings.duration(arguments, "device-ttl")
        activityTTL = try Settings.duration(arguments, "activity-ttl")
        maxDevicesPerUser = try Self.count(arguments, "max-devices-per-user", max: 10_000)
        maxActivitiesPerDevice = try Self.count(arguments, "max-activities-per-device", max: 1_000)
        if let failure = arguments.removedVariable("max-apps") { throw failure }
        apps = try Self.apps(arguments)
    }

    func apply<C: RuleConfiguration>(to configuration: inout C) {
        if let deviceTTL { configuration.deviceTTL = deviceTTL }
        if let activityTTL { configuration.activityTTL = activityTTL }
        if let maxDevicesPerUser { configuration.maxDevicesPerUser = maxDevicesPerUser }
        if let maxActivitiesPerDevice { configuration.maxActivitiesPerDevice = maxActivitiesPerDevice }
        if let apps { configuration.apps = apps }
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

/// The rules every store configuration carries, so `StoreRules` sets them
/// the same way on each.
protocol RuleConfiguration {
    var deviceTTL: Duration { get set }
    var activityTTL: Duration { get set }
    var maxDevicesPerUser: Int { get set }
    var maxActivitiesPerDevice: Int { get set }
    var apps: DeclaredApps { get set }
}

extension LMDBRegistryStore.Configuration: RuleConfiguration {}
extension PostgresRegistryStore.Configuration: RuleConfiguration {}
