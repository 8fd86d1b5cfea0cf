import Foundation

/// The wall clock.
public struct SystemClock: RegistryClock {
    public init() {}

    public func now() -> Timestamp { Timestamp(secondsSince1970: Date().timeIntervalSince1970) }
}
