/// Which push service a device's `pushToken` belongs to.
public enum Platform: String, Sendable, Hashable, CaseIterable {
    case apns
    case fcm
}

/// The APNs host a token belongs to. A token sent to the wrong one fails with
/// `BadDeviceToken`, so the environment travels with every token.
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable {
    case production
    case sandbox
}
