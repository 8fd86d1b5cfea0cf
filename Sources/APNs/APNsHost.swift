/// Which APNs environment a device token belongs to: an app built for
/// development registers sandbox tokens, which production refuses.
public enum APNsHost: String, Sendable, CaseIterable {
    case production, sandbox
}
