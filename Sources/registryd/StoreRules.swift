import Registry

/// The registry's rules as the flags set them (`--device-ttl`,
/// `--activity-ttl`, `--max-devices-per-user`, `--max-activities-per-device`,
/// `--max-apps`), applied to whichever backend's configuration `--store`
/// chose. A flag left unset keeps that configuration's own default, so a
/// default is written once, next to what it configures.
struct StoreRules {
    var deviceTTL: Duration?
    var activityTTL: Duration?
    var maxDevicesPerUser: Int?
    var maxActivitiesPerDevice: Int?
    var maxApps: Int?

    init(_ arguments: Arguments) throws(Arguments.Failure) {
        deviceTTL = try Settings.duration(arguments, "device-ttl")
        activityTTL = try Settings.duration(arguments, "activity-ttl")
        maxDevicesPerUser = try Self.count(arguments, "max-devices-per-user", max: 10_000)
        maxActivitiesPerDevice = try Self.count(arguments, "max-activities-per-device", max: 1_000)
        maxApps = try Self.count(arguments, "max-apps", max: 10_000)
    }

    func apply<C: RuleConfiguration>(to configuration: inout C) {
        if let deviceTTL { configuration.deviceTTL = deviceTTL }
        if let activityTTL { configuration.activityTTL = activityTTL }
        if let maxDevicesPerUser { configuration.maxDevicesPerUser = maxDevicesPerUser }
        if let maxActivitiesPerDevice { configuration.maxActivitiesPerDevice = maxActivitiesPerDevice }
        if let maxApps { configuration.maxApps = maxApps }
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
    var maxApps: Int { get set }
}

extension LMDBRegistryStore.Configuration: RuleConfiguration {}
extension PostgresRegistryStore.Configuration: RuleConfiguration {}
